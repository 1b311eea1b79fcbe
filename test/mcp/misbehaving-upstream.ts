import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * An upstream MCP server that misbehaves as a test tells it to, built on the official SDK's low-level
 * `Server` (stateless Streamable HTTP, JSON answers), so that its `tools/list` can say what no
 * well-made server would: a name twice, a cursor that never ends, a schema with a backtracking
 * pattern, an answer of megabytes, or no answer at all.
 */
export interface MisbehavingUpstream {
  url: string;
  /** `tools/list` requests that reached the server. */
  listings(): number;
  /** `tools/list` requests whose connection is still open (a listing that hangs). */
  openListings(): number;
  /** Resolves once `n` listings have reached the server. */
  waitForListing(n: number): Promise<void>;
  close(): Promise<void>;
}

/** What the server answers; `list` gets the cursor it was sent, `call` the tool's name, arguments and `_meta`. */
export interface Misbehaviour {
  list(cursor: string | undefined, n: number): Promise<ListToolsResult> | ListToolsResult;
  call?(
    name: string,
    args?: Record<string, unknown>,
    meta?: Record<string, unknown>,
  ): Promise<CallToolResult> | CallToolResult;
}

/** A tool entry with a plain object schema. */
export function tool(name: string, inputSchema: Record<string, unknown> = { type: 'object' }, extra = {}) {
  return { name, inputSchema: inputSchema as { type: 'object' }, ...extra };
}

/** Starts the server on a free loopback port. */
export async function startMisbehavingUpstream(behaviour: Misbehaviour): Promise<MisbehavingUpstream> {
  let listings = 0;
  const open = new Set<ServerResponse>();
  let waiters: { n: number; resolve: () => void }[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const server = new Server(
      { name: 'misbehaving-upstream', version: '1.0.0' },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      listings++;
      open.add(res);
      res.once('close', () => open.delete(res));
      for (const waiter of waiters.filter((w) => listings >= w.n)) waiter.resolve();
      waiters = waiters.filter((w) => listings < w.n);
      return behaviour.list(request.params?.cursor, listings);
    });
    server.setRequestHandler(CallToolRequestSchema, async (request) =>
      behaviour.call
        ? behaviour.call(request.params.name, request.params.arguments, request.params._meta)
        : { content: [{ type: 'text', text: 'ok' }] },
    );
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    listings: () => listings,
    openListings: () => open.size,
    waitForListing: (n) =>
      listings >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    async close() {
      for (const res of open) res.destroy();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
