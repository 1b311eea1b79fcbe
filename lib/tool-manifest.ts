import { pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import type { ToolEnvironment, ToolFactory } from '../functions/tools/registry';

/**
 * What synth needs to know about the tools, read from the tools module itself: tools are code, so the
 * only way to check their retention (SPEC §8) and timeouts against the queues before deploying is to
 * load the module once at synth time, as the handlers will.
 */

/** Per-tool settings known at synth time. */
export interface ToolManifest {
  /** Every tool name, in registration order. */
  names: string[];
  /** Tools that set `retention` (seconds in code), as durations. */
  retentions: Record<string, Duration>;
  /** Every tool's `timeoutMs` (default 10 s), as durations. */
  timeouts: Record<string, Duration>;
}

/** The default `timeoutMs` of a tool (SPEC §4). */
const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

/**
 * Load a tools module and describe its tools. The factory receives the environment the Lambdas will
 * see, minus anything only known at runtime.
 *
 * @example
 * ```ts
 * const manifest = await readToolManifest('/abs/functions/tools/builtin.ts', {
 *   workspaceRoot: '/tmp/tool-ledger', webhookAllow: [], local: false,
 * });
 * new ToolLedger(stack, 'Ledger', { toolRetentions: manifest.retentions, toolTimeouts: manifest.timeouts });
 * ```
 */
export async function readToolManifest(modulePath: string, env: ToolEnvironment): Promise<ToolManifest> {
  const loaded: { default?: unknown } = await import(pathToFileURL(modulePath).href);
  if (typeof loaded.default !== 'function') {
    throw new Error(
      `${modulePath} must default-export a ToolFactory, (env: ToolEnvironment) => Tool[]: ` +
        'add `export default myTools;` (the handlers import it as the default export of #tool-ledger/tools).',
    );
  }
  const tools = (loaded.default as ToolFactory)(env);
  const manifest: ToolManifest = { names: [], retentions: {}, timeouts: {} };
  for (const tool of tools) {
    manifest.names.push(tool.name);
    // A read tool's `retention` is the lifetime of its result cache, and reads are never queued, so
    // SPEC §8's check (a message must not outlive its record) does not apply to it.
    if (tool.retention !== undefined && tool.effect !== 'read') {
      manifest.retentions[tool.name] = Duration.seconds(tool.retention);
    }
    manifest.timeouts[tool.name] = Duration.millis(tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS);
  }
  return manifest;
}
