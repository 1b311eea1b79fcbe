import type { Runtime } from '../wiring';
import { MCP_UPSTREAMS_VARIABLE, parseUpstreams } from './upstreams';

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
 * runtime.refreshTools = withUpstreams(runtime); // a no-op: this deployment has no upstreams
 * ```
 */
export function withUpstreams(_runtime: Runtime, env: NodeJS.ProcessEnv = process.env): () => Promise<void> {
  if (parseUpstreams(env[MCP_UPSTREAMS_VARIABLE]).length > 0) {
    throw new Error(
      `${MCP_UPSTREAMS_VARIABLE} names upstreams, but these handlers were bundled without the MCP gateway: set mcpUpstreams on the construct and deploy again`,
    );
  }
  return async () => {};
}
