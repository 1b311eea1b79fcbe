import { type LocalSettings, loadLocalSettings } from '../../functions/local/settings';

/**
 * Settings for local mode started inside a test's process on the test's own data folder: free ports,
 * the reconciler idle (the test moves records), error logs only.
 *
 * @example
 * ```ts
 * const stack = await startStack(quietLocalSettings(dataDir, 'agent-token=local:agent'));
 * ```
 */
export function quietLocalSettings(dataDir: string, tokens: string): LocalSettings {
  return loadLocalSettings(
    {
      TOOL_LEDGER_TOKENS: tokens,
      TOOL_LEDGER_DATA_DIR: dataDir,
      PORT: '0',
      TOOL_LEDGER_RECONCILE_EVERY_MS: '3600000',
      TOOL_LEDGER_LOG_LEVEL: 'ERROR',
    },
    false,
  );
}
