import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MCP_META_OPERATION_ID, ToolLedgerMcpClient } from '../../client/mcp';
import { signingFetch } from '../../client/mcp-fetch';
import { assertOperationId } from '../../client/operation-id';
import { type Command, integerOption, stringOption } from '../command';
import { type Connection, signerFor } from '../connection';
import { MCP_META_ID_SOURCE, SESSION_WINDOW_SECONDS, SessionWindow } from '../mcp-session-window';
import { UsageError } from '../usage-error';

/** Where operation IDs of the bridged calls come from. */
export type OperationIdSource =
  /** The MCP client sets `_meta["io.tool-ledger/operation-id"]`; a write without one is refused. */
  | 'caller'
  /** A call without one gets a fresh ID of its own at the bridge, kept across the bridge's retries. */
  | 'per-call'
  /**
   * A call without one gets the ID of the session window: the same tool and canonical arguments name
   * the same operation for `--session-window` seconds (cli/mcp-session-window.ts).
   */
  | 'session';

/**
 * `tool-ledger mcp`: a stdio MCP server for desktop MCP clients that launch servers as processes
 * (Claude Desktop, Claude Code, IDEs), bridging every request to the deployment's `POST /mcp` with the
 * CLI's credentials (a bearer token locally, SigV4 on AWS). stdout carries the protocol only; nothing
 * else is ever printed there.
 */
export const mcpCommand: Command = {
  name: 'mcp',
  role: 'agent',
  summary: 'a stdio MCP server that bridges to the deployment (for desktop MCP clients)',
  usage: 'mcp [--operation-ids caller|per-call|session] [--session-window SECONDS]',
  description:
    'Serves MCP over stdin/stdout and forwards tools/list and tools/call to the deployment’s /mcp,\n' +
    'signed like every other command (--token, or --sigv4). Configure it as the command of an MCP\n' +
    'server in your client. Transport failures between the bridge and the deployment are retried with\n' +
    'the same operation ID, so a lost response never runs an action twice.\n\n' +
    '  --operation-ids caller    (default) the client sets _meta["io.tool-ledger/operation-id"];\n' +
    '                            write tools called without it are refused by the ledger\n' +
    '  --operation-ids per-call  a call without one gets a fresh ID at the bridge: for clients\n' +
    '                            that cannot set _meta. Each tools/call is then one operation:\n' +
    '                            the bridge’s own retries are safe, but a model that calls a tool\n' +
    '                            again makes a new operation\n' +
    '  --operation-ids session   a call without one is named by the session: within\n' +
    '                            --session-window seconds (default 600) of its first call, the same\n' +
    '                            tool with the same arguments is the same operation and replays;\n' +
    '                            two identical calls meant as two actions are then one',
  options: { 'operation-ids': { type: 'string' }, 'session-window': { type: 'string' } },
  args: { min: 0, max: 0 },
  async run({ connection, values }) {
    const source = stringOption(values, 'operation-ids') ?? 'caller';
    if (source !== 'caller' && source !== 'per-call' && source !== 'session') {
      throw new UsageError('--operation-ids must be caller, per-call or session', 'mcp');
    }
    const window = integerOption(values, 'session-window', 'mcp', 1);
    if (window !== undefined && source !== 'session') {
      throw new UsageError('--session-window only applies with --operation-ids session', 'mcp');
    }
    if (window !== undefined && window > SESSION_WINDOW_SECONDS.max) {
      throw new UsageError(`--session-window must be at most ${SESSION_WINDOW_SECONDS.max} seconds`, 'mcp');
    }
    await runStdioBridge(connection, {
      operationIds: source,
      ...(window === undefined ? {} : { sessionWindowSeconds: window }),
    });
  },
};

/** Options of {@link runStdioBridge}. */
export interface StdioBridgeOptions {
  operationIds: OperationIdSource;
  /** With `session`: how long a call's window lasts. @default 600 */
  sessionWindowSeconds?: number;
  /** @default process.stdin */
  stdin?: Readable;
  /** @default process.stdout */
  stdout?: Writable;
}

/**
 * Runs the bridge until stdin ends: connects to `<endpoint>/mcp` (the `initialize` exchange, so a wrong
 * endpoint or credentials fail at start), then serves stdio with the deployment's own server info and
 * instructions.
 *
 * @example
 * ```ts
 * await runStdioBridge(resolveConnection({ token: process.env.TOKEN }, process.env), { operationIds: 'caller' });
 * ```
 */
export async function runStdioBridge(connection: Connection, options: StdioBridgeOptions): Promise<void> {
  const base = connection.endpoint.href.endsWith('/')
    ? connection.endpoint.href
    : `${connection.endpoint.href}/`;
  const deployment = new Client({ name: 'tool-ledger-stdio-bridge', version: '1.0.0' }, { capabilities: {} });
  await deployment.connect(
    new StreamableHTTPClientTransport(new URL('mcp', base), {
      fetch: signingFetch(await signerFor(connection.auth)),
    }),
  );
  const ledger = new ToolLedgerMcpClient(deployment);
  const window =
    options.operationIds === 'session'
      ? new SessionWindow((options.sessionWindowSeconds ?? SESSION_WINDOW_SECONDS.default) * 1000)
      : undefined;
  const info = deployment.getServerVersion() ?? { name: 'tool-ledger', version: '0' };
  const instructions = deployment.getInstructions();
  const server = new Server(info, {
    capabilities: { tools: {} },
    ...(instructions === undefined ? {} : { instructions }),
  });
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
    deployment.listTools(request.params, { signal: extra.signal }),
  );
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args, _meta } = request.params;
    let operationId = _meta?.[MCP_META_OPERATION_ID];
    const fromWindow = operationId === undefined && window !== undefined;
    if (operationId === undefined && options.operationIds === 'per-call')
      operationId = `bridge:${randomUUID()}`;
    if (fromWindow) operationId = window.idFor(name, args);
    if (typeof operationId !== 'string' || !isOperationId(operationId)) {
      // Forwarded as it came: the ledger refuses a write without a valid ID (empty, too long, a
      // control character) with a tool result that says why, never a JSON-RPC internal error.
      return deployment.callTool(request.params, undefined, { signal: extra.signal });
    }
    const result = await ledger.callTool(
      { name, operationId, ...(args === undefined ? {} : { arguments: args }), ...(_meta ? { _meta } : {}) },
      { signal: extra.signal },
    );
    // Marked, so a client (and the person reading its log) can tell the bridge chose the operation.
    return fromWindow
      ? { ...result, _meta: { ...result._meta, [MCP_META_ID_SOURCE]: 'session-window' } }
      : result;
  });
  const stdin = options.stdin ?? process.stdin;
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  await server.connect(new StdioServerTransport(stdin, options.stdout ?? process.stdout));
  // The SDK's stdio transport does not watch for the end of its input; a client that exits ends it.
  stdin.once('end', () => void server.close());
  await closed;
  await deployment.close();
}

/** Whether the ledger's client would send this operation ID (1 to 255 characters, 0x21-0x7E). */
function isOperationId(id: string): boolean {
  try {
    assertOperationId(id);
    return true;
  } catch {
    return false;
  }
}
