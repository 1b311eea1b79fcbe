import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { MAX_ARGUMENTS_DEPTH } from '../domain/digest';
import type { ApiResponse } from '../http/responses';
import type { RouteContext } from '../http/route-context';
import { createFrontDoor } from './front-door';

/** Request headers the MCP transport reads; nothing else (credentials above all) is handed to it. */
const FORWARDED_HEADERS = [
  'accept',
  'content-type',
  'mcp-protocol-version',
  'mcp-session-id',
  'last-event-id',
];

/**
 * `POST /mcp`: MCP's Streamable HTTP transport, stateless (no session) with JSON responses, so that one
 * API Gateway request carries one JSON-RPC exchange and nothing outlives the Lambda invocation. The
 * caller was authenticated and its tenant derived like every other route's; the body went through the
 * same checks (media type, 256 KiB, I-JSON) before the SDK's web-standard transport sees it as parsed
 * JSON. The SDK answers the protocol (initialize, tools/list, tools/call, notifications, JSON-RPC
 * errors); this adapter only converts between the API Gateway event and fetch's Request / Response.
 *
 * @example
 * ```ts
 * // functions/http/routes.ts: the handler of the contract's `mcp` route (POST /mcp)
 * const HANDLERS = { …, mcp: handleMcp };
 * ```
 */
export async function handleMcp({ deps, req, request, identity }: RouteContext): Promise<ApiResponse> {
  request.query([]);
  // JSON-RPC nests the arguments deeper than POST /v1/operations does (`params.arguments`); the body
  // limit leaves room for that, so the engine's own 32-level check on the arguments is the one that
  // answers (a tool result naming the field), while a hostile body is still refused before parsing.
  const body = request.jsonBody(MAX_ARGUMENTS_DEPTH + 8);
  // MCP dropped JSON-RPC batches (protocol 2025-06-18): one request, one exchange. A batch would let
  // one small body ask for hundreds of answers, each a tool call or a listing.
  if (Array.isArray(body)) return batchRefused();
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    for (const value of request.headerValues(name)) headers.append(name, value);
  }
  // The URL is never used for routing or shown to anyone: the route already matched.
  const webRequest = new Request('http://tool-ledger.internal/mcp', { method: 'POST', headers });
  const server = createFrontDoor({ deps, req, identity });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(webRequest, { parsedBody: body });
    return await toApiResponse(response);
  } finally {
    await server.close();
  }
}

/** A JSON-RPC batch: `Invalid Request` (-32600), HTTP 400, nothing handled. */
function batchRefused(): ApiResponse {
  return {
    statusCode: 400,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'JSON-RPC batches are not supported: send one request per POST' },
    }),
  };
}

async function toApiResponse(response: Response): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // As every answer of the API: never cached, never sniffed.
  headers['cache-control'] = 'no-store';
  headers['x-content-type-options'] = 'nosniff';
  return { statusCode: response.status, headers, body: await response.text() };
}
