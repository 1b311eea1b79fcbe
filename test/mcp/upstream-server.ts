import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { META_OPERATION_ID } from '../../functions/mcp/protocol';

/**
 * A real upstream MCP server for the gateway tests, built with the official SDK (stateless Streamable
 * HTTP, JSON responses), whose tools count what reaches them:
 *
 * | tool | does |
 * | --- | --- |
 * | `count` `{label, times?}` | counts the call (its effect) and returns the count so far |
 * | `hang` `{label}` | counts the call, never answers (a lost response) |
 * | `fail` `{label}` | counts the call, answers a result with `isError` |
 * | `reset` `{label}` | counts the call, then drops the connection without an answer |
 * | `peek` `{label}` | `readOnlyHint: true`; counts the call |
 * | `wipe` `{label}` | `destructiveHint: true`; counts the call |
 * | `upsert` `{label}` | `idempotentHint: true`; counts the call, never answers |
 * | `shift` `{label}` | the annotations {@link UpstreamServer.setShiftHints} last set (a server that changes its hints between listings); counts the call |
 */
export interface UpstreamServer {
  url: string;
  /** Calls that reached each tool. */
  calls(tool: string): number;
  /** The `_meta["io.tool-ledger/operation-id"]` of every call to a tool, in order. */
  keys(tool: string): string[];
  /** Resolves at the `n`-th call to `tool`. */
  waitForCall(tool: string, n?: number): Promise<void>;
  /** The annotations `shift` lists from now on. @default { destructiveHint: true } */
  setShiftHints(hints: Record<string, boolean>): void;
  close(): Promise<void>;
}

/** Options of {@link startUpstreamServer}. */
export interface UpstreamOptions {
  /**
   * Answer a POST whatever its `Accept` says, as hand-written MCP servers often do: the SDK's transport
   * refuses a request that does not accept `text/event-stream` (406), so this server adds it first.
   * @default false
   */
  lenientAccept?: boolean;
}

/** Starts the upstream on a free loopback port. */
export async function startUpstreamServer(options: UpstreamOptions = {}): Promise<UpstreamServer> {
  const seen: { tool: string; key: string | undefined }[] = [];
  let waiters: { tool: string; n: number; resolve: () => void }[] = [];
  const hanging = new Set<ServerResponse>();
  const calls = (tool: string) => seen.filter((s) => s.tool === tool).length;
  const record = (tool: string, meta: Record<string, unknown> | undefined) => {
    const key = meta?.[META_OPERATION_ID];
    seen.push({ tool, key: typeof key === 'string' ? key : undefined });
    for (const waiter of waiters.filter((w) => w.tool === tool && calls(tool) >= w.n)) waiter.resolve();
    waiters = waiters.filter((w) => !(w.tool === tool && calls(tool) >= w.n));
  };
  const label = { label: z.string() };
  let shiftHints: Record<string, boolean> = { destructiveHint: true };

  function mcpFor(res: ServerResponse): McpServer {
    const server = new McpServer({ name: 'counting-upstream', version: '1.0.0' });
    server.registerTool(
      'count',
      {
        description: 'Counts its calls',
        inputSchema: { label: z.string(), times: z.number().int().default(1) },
      },
      async (_args, extra) => {
        record('count', extra._meta);
        return {
          content: [{ type: 'text', text: `count=${calls('count')}` }],
          structuredContent: { count: calls('count') },
        };
      },
    );
    server.registerTool('hang', { description: 'Never answers', inputSchema: label }, async (_a, extra) => {
      record('hang', extra._meta);
      hanging.add(res);
      return new Promise(() => {});
    });
    server.registerTool('fail', { description: 'Always fails', inputSchema: label }, async (_a, extra) => {
      record('fail', extra._meta);
      return { content: [{ type: 'text', text: 'no such thing' }], isError: true };
    });
    server.registerTool('reset', { description: 'Drops the line', inputSchema: label }, async (_a, extra) => {
      record('reset', extra._meta);
      res.socket?.destroy();
      return new Promise(() => {});
    });
    server.registerTool(
      'peek',
      { description: 'Claims to be read-only', inputSchema: label, annotations: { readOnlyHint: true } },
      async (_a, extra) => {
        record('peek', extra._meta);
        return { content: [{ type: 'text', text: `peek=${calls('peek')}` }] };
      },
    );
    server.registerTool(
      'wipe',
      { description: 'Claims to be destructive', inputSchema: label, annotations: { destructiveHint: true } },
      async (_a, extra) => {
        record('wipe', extra._meta);
        return { content: [{ type: 'text', text: 'wiped' }] };
      },
    );
    server.registerTool(
      'upsert',
      { description: 'Claims to be idempotent', inputSchema: label, annotations: { idempotentHint: true } },
      async (_a, extra) => {
        record('upsert', extra._meta);
        hanging.add(res);
        return new Promise(() => {});
      },
    );
    server.registerTool(
      'shift',
      { description: 'Changes its hints', inputSchema: label, annotations: shiftHints },
      async (_a, extra) => {
        record('shift', extra._meta);
        return { content: [{ type: 'text', text: `shift=${calls('shift')}` }] };
      },
    );
    return server;
  }

  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const server = mcpFor(res);
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true,
        });
        res.on('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        if (options.lenientAccept) req.headers.accept = 'application/json, text/event-stream';
        const text = Buffer.concat(chunks).toString('utf8');
        await transport.handleRequest(req, res, text === '' ? undefined : JSON.parse(text));
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    keys: (tool) => seen.filter((s) => s.tool === tool).map((s) => s.key ?? ''),
    setShiftHints(hints) {
      shiftHints = { ...hints };
    },
    waitForCall(tool, n = 1) {
      if (calls(tool) >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ tool, n, resolve }));
    },
    async close() {
      for (const res of hanging) res.destroy();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
