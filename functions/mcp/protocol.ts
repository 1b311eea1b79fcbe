/**
 * The names tool-ledger adds to MCP, in one place: the front door, the gateway, the stdio bridge and
 * the client helper all read them here. They live in `_meta` under tool-ledger's own prefix, as MCP
 * reserves unprefixed `_meta` keys for itself.
 */

/** `params._meta` key of a `tools/call` that carries the operation ID (and, upstream, the downstream key). */
export const META_OPERATION_ID = 'io.tool-ledger/operation-id';

/** Optional `params._meta` key naming the agent run, stored as the operation's `agent_run_id`. */
export const META_AGENT_RUN_ID = 'io.tool-ledger/agent-run-id';

/** Result `_meta` key: `true` when this call did not run the effect but replayed a stored outcome. */
export const META_REPLAYED = 'io.tool-ledger/replayed';

/** What the front door and the bridge call themselves in `initialize`. */
export const SERVER_INFO = { name: 'tool-ledger', version: '0.1.0' } as const;

/** What the gateway calls itself when it connects to an upstream. */
export const GATEWAY_CLIENT_INFO = { name: 'tool-ledger-gateway', version: SERVER_INFO.version } as const;
