import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { GATEWAY_CLIENT_INFO } from './protocol';
import type { McpUpstream } from './upstreams';

/** Most pages of `tools/list` read from one upstream: a server that keeps paging is cut off. */
const MAX_LIST_PAGES = 20;

/**
 * Most bytes read from one upstream answer (a `tools/list` page, a `tools/call` result): an upstream
 * that answers more is cut off, the answer refused, and the process keeps its memory. Results the
 * ledger stores are far smaller (they are kept up to 32 KiB).
 */
export const MAX_UPSTREAM_ANSWER_BYTES = 4 * 1024 * 1024;

/** Most tools served from one upstream; the rest of a longer listing is not served (logged). */
export const MAX_UPSTREAM_TOOLS = 500;

/** An upstream answer longer than {@link MAX_UPSTREAM_ANSWER_BYTES}. */
export class UpstreamAnswerTooLargeError extends Error {
  constructor() {
    super(`an upstream answer exceeded ${MAX_UPSTREAM_ANSWER_BYTES} bytes`);
    this.name = 'UpstreamAnswerTooLargeError';
  }
}

/**
 * `fetch`, with every answer's body cut off past `limit` bytes (a declared `content-length` over it is
 * refused before the body is read): the SDK's transport reads answers whole, so the bound is here.
 */
export function boundedFetch(limit: number = MAX_UPSTREAM_ANSWER_BYTES): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    if (declared > limit) {
      await res.body?.cancel().catch(() => undefined);
      throw new UpstreamAnswerTooLargeError();
    }
    if (res.body === null) return res;
    let read = 0;
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          read += chunk.byteLength;
          if (read > limit) controller.error(new UpstreamAnswerTooLargeError());
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * A fresh SDK client connected to an upstream (the `initialize` exchange done). One per call: the
 * ledger keeps no session with an upstream, so an attempt never depends on state another attempt left.
 * Rejects if the connection or the handshake fails; then nothing of a tool call has been sent.
 *
 * @example
 * ```ts
 * const client = await connectUpstream(upstream, AbortSignal.timeout(5000));
 * try { await client.listTools(); } finally { await client.close(); }
 * ```
 */
export async function connectUpstream(upstream: McpUpstream, signal: AbortSignal): Promise<Client> {
  const client = new Client(GATEWAY_CLIENT_INFO, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(upstream.url), {
    // An upstream redirect could point anywhere; the deployment named this URL, not another.
    requestInit: { redirect: 'error' },
    fetch: boundedFetch(),
  });
  await client.connect(transport, { signal, timeout: upstream.timeoutMs });
  return client;
}

/**
 * Every tool an upstream lists (all pages, at most {@link MAX_LIST_PAGES}, at most
 * {@link MAX_UPSTREAM_TOOLS} tools), within `timeoutMs`. A cursor the upstream already gave ends the
 * paging (a server that repeats itself would otherwise list the same tools again).
 *
 * @example
 * ```ts
 * const tools = await listUpstreamTools(upstream, 5000);
 * ```
 */
export async function listUpstreamTools(upstream: McpUpstream, timeoutMs: number): Promise<McpTool[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  const client = await connectUpstream(upstream, signal);
  try {
    const tools: McpTool[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor }, {
        signal,
        timeout: timeoutMs,
      });
      tools.push(...listed.tools.slice(0, MAX_UPSTREAM_TOOLS + 1 - tools.length));
      cursor = listed.nextCursor;
      if (cursor === undefined || cursors.has(cursor) || tools.length > MAX_UPSTREAM_TOOLS) break;
      cursors.add(cursor);
    }
    return tools;
  } finally {
    await closeQuietly(client);
  }
}

/** Closes a client; a failure to close changes nothing the caller has already learned. */
export async function closeQuietly(client: Client): Promise<void> {
  try {
    await client.close();
  } catch {
    // The call's outcome is already decided; a transport that will not close is dropped.
  }
}
