import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { GATEWAY_CLIENT_INFO } from './protocol';
import type { McpUpstream } from './upstreams';

/** Most pages of `tools/list` read from one upstream: a server that keeps paging is cut off. */
const MAX_LIST_PAGES = 20;

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
  });
  await client.connect(transport, { signal, timeout: upstream.timeoutMs });
  return client;
}

/**
 * Every tool an upstream lists (all pages), within `timeoutMs`.
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
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor }, {
        signal,
        timeout: timeoutMs,
      });
      tools.push(...listed.tools);
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
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
