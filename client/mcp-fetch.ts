import type { RequestSigner } from './signer';

/** The `fetch` shape the MCP SDK's `StreamableHTTPClientTransport` accepts (`{ fetch }` option). */
export type McpFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A `fetch` that signs every request with a {@link RequestSigner} (a bearer token, or SigV4 for a
 * deployment behind API Gateway's IAM auth), for the MCP SDK's Streamable HTTP client transport. The
 * body is read once and signed as sent, since SigV4 covers its hash. Redirects are refused: a signed
 * request must go to the host it was signed for.
 *
 * @example
 * ```ts
 * const transport = new StreamableHTTPClientTransport(new URL(`${endpoint}/mcp`), {
 *   fetch: signingFetch(sigv4Signer({ region: 'eu-west-1' })),
 * });
 * ```
 */
export function signingFetch(signer: RequestSigner | undefined, base: McpFetch = fetch): McpFetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text();
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name.toLowerCase()] = value;
    });
    const url = new URL(request.url);
    const signed = signer
      ? await signer.sign({ method: request.method, url, headers, ...(body === undefined ? {} : { body }) })
      : headers;
    return base(url, {
      method: request.method,
      headers: signed,
      redirect: 'error',
      ...(body === undefined ? {} : { body }),
      ...(init?.signal ? { signal: init.signal } : {}),
    });
  };
}
