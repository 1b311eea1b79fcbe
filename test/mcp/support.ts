import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { ApiHandler } from '../../functions/http/api-handler';
import { META_OPERATION_ID } from '../../functions/mcp/protocol';
import { testContext } from '../http/support';

/**
 * A fetch for the SDK's client transport that never opens a socket: each request becomes the REST
 * proxy event API Gateway would deliver, handed to the API Lambda handler, and its result becomes the
 * Response. The SDK client speaks to the handler exactly as it would through API Gateway.
 */
export function handlerFetch(handler: ApiHandler): FetchLike {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
      multiValueHeaders[name] = [value];
    });
    const body = request.method === 'GET' ? '' : await request.text();
    const event = {
      httpMethod: request.method,
      path: url.pathname,
      resource: url.pathname,
      headers,
      multiValueHeaders,
      body: body === '' ? null : body,
      isBase64Encoded: false,
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      pathParameters: null,
      stageVariables: null,
      requestContext: {
        requestId: randomUUID(),
        identity: { sourceIp: '127.0.0.1', userArn: null },
      } as unknown as APIGatewayProxyEvent['requestContext'],
    } as APIGatewayProxyEvent;
    const result = await handler(event, testContext());
    const status = result.statusCode;
    const noBody = status === 202 || status === 204 || result.body === '';
    return new Response(noBody ? null : result.body, {
      status,
      headers: result.headers as Record<string, string>,
    });
  };
}

/** An SDK client connected to `url` (an HTTP URL, or any URL with a custom fetch), with a bearer token. */
export async function mcpClient(url: string, token: string, fetch?: FetchLike): Promise<Client> {
  const client = new Client({ name: 'tool-ledger-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    ...(fetch ? { fetch } : {}),
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool with an operation ID in `_meta` (or none). */
export async function callWithId(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  operationId?: string,
): Promise<CallToolResult> {
  return (await client.callTool({
    name,
    arguments: args,
    ...(operationId === undefined ? {} : { _meta: { [META_OPERATION_ID]: operationId } }),
  })) as CallToolResult;
}

/** The operation body of a result (`structuredContent`). */
export function body(result: CallToolResult): Record<string, unknown> {
  return (result.structuredContent ?? {}) as Record<string, unknown>;
}
