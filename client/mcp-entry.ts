/**
 * `@tool-ledger/client/mcp`: the MCP client helper, a separate entry so that only those who speak MCP
 * load the MCP SDK (an optional peer dependency). Each `callTool` carries a stable operation ID in
 * `_meta["io.tool-ledger/operation-id"]` and a retry reuses it.
 *
 * @example
 * ```ts
 * import { ToolLedgerMcpClient } from '@tool-ledger/client/mcp';
 * ```
 */

export type { McpToolCall, ToolLedgerMcpClientOptions } from './mcp';
export { MCP_META_AGENT_RUN_ID, MCP_META_OPERATION_ID, MCP_META_REPLAYED, ToolLedgerMcpClient } from './mcp';
export type { McpFetch } from './mcp-fetch';
export { signingFetch } from './mcp-fetch';
