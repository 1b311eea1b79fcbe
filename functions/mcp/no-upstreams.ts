import { readSetting, SETTINGS } from '../contract/environment';
import type { LedgerDeps } from '../engine/ledger-deps';
import { parseUpstreams } from './upstreams';

/**
 * What the handlers' `#tool-ledger/upstreams` import is bundled as when a deployment names no MCP
 * upstreams: the gateway (functions/mcp/gateway.ts) and what it brings, the MCP SDK's client and Ajv,
 * stay out of the Lambda bundles, which then load in less time. The construct swaps the gateway in
 * whenever `mcpUpstreams` is set; local mode and the tests always run the gateway itself.
 *
 * Should the environment name upstreams anyway (changed by hand after a deployment), the runtime does
 * not start, saying why, rather than serve without their tools.
 *
 * @example
 * ```ts
 * runtime.refreshTools = withUpstreams(deps); // a no-op: this deployment has no upstreams
 * ```
 */
export function withUpstreams(
  _deps: Pick<LedgerDeps, 'tools'>,
  env: NodeJS.ProcessEnv = process.env,
): () => Promise<void> {
  if (parseUpstreams(readSetting(env, SETTINGS.mcpUpstreams)).length > 0) {
    throw new Error(
      `${SETTINGS.mcpUpstreams.name} names upstreams, but these handlers were bundled without the MCP gateway: set mcpUpstreams on the construct and deploy again`,
    );
  }
  return async () => {};
}
