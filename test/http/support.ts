import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { LedgerConfig } from '../../functions/config';
import type { AnyTool } from '../../functions/domain/tool';
import { type ApiHandler, createApiHandler } from '../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { freshTable } from '../support/dynalite';
import { type TestLedger, testLedger } from '../support/harness';

/** Tokens of the HTTP tests: two tenants, one token per role, and one token holding every role. */
export const TOKENS = [
  'agent-a=acme:agent',
  'approver-a=acme:approver',
  'operator-a=acme:operator',
  'all-a=acme:agent+approver+operator',
  'agent-b=other:agent',
  'approver-b=other:approver',
  'operator-b=other:operator',
].join(',');

/** One HTTP request as a test writes it; {@link toEvent} turns it into what API Gateway delivers. */
export interface TestRequest {
  method?: string;
  path: string;
  /** Bearer token; `null` sends no Authorization header. @default 'agent-a' */
  token?: string | null;
  /** Extra headers as [name, value] pairs; a name may repeat (API Gateway's multiValueHeaders). */
  headers?: [string, string][];
  /** Idempotency-Key value; `null` omits it. */
  key?: string | null;
  /** A value is sent as JSON; a string is sent as is. */
  body?: unknown;
  /** Send `body` (bytes or a string) base64-encoded, as API Gateway does for binary media types. */
  base64?: boolean | Buffer;
  /** A body already base64-encoded (possibly not valid base64), sent with `isBase64Encoded`. */
  base64Raw?: string;
  /** @default 'application/json'; `null` omits it. */
  contentType?: string | null;
  query?: [string, string][];
}

/**
 * The REST proxy event API Gateway would build for a request: `headers` keeps the last occurrence of
 * each name, `multiValueHeaders` keeps them all; the path stays percent-encoded.
 */
export function toEvent(request: TestRequest): APIGatewayProxyEvent {
  const method = request.method ?? (request.body === undefined ? 'GET' : 'POST');
  const pairs: [string, string][] = [];
  const token = request.token === undefined ? 'agent-a' : request.token;
  if (token !== null) pairs.push(['Authorization', `Bearer ${token}`]);
  if (request.body !== undefined || request.base64 !== undefined || request.base64Raw !== undefined) {
    const contentType = request.contentType === undefined ? 'application/json' : request.contentType;
    if (contentType !== null) pairs.push(['Content-Type', contentType]);
  }
  if (request.key !== undefined && request.key !== null) pairs.push(['Idempotency-Key', request.key]);
  pairs.push(...(request.headers ?? []));
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of pairs) {
    headers[name] = value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  let body: string | null = null;
  let isBase64Encoded = false;
  if (request.base64Raw !== undefined) {
    body = request.base64Raw;
    isBase64Encoded = true;
  } else if (Buffer.isBuffer(request.base64)) {
    body = request.base64.toString('base64');
    isBase64Encoded = true;
  } else if (request.body !== undefined) {
    body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
    if (request.base64) {
      body = Buffer.from(body, 'utf8').toString('base64');
      isBase64Encoded = true;
    }
  }
  let queryStringParameters: Record<string, string> | null = null;
  let multiValueQueryStringParameters: Record<string, string[]> | null = null;
  for (const [name, value] of request.query ?? []) {
    queryStringParameters ??= {};
    multiValueQueryStringParameters ??= {};
    queryStringParameters[name] = value;
    multiValueQueryStringParameters[name] = [...(multiValueQueryStringParameters[name] ?? []), value];
  }
  return {
    httpMethod: method,
    path: request.path,
    resource: '/{proxy+}',
    headers,
    multiValueHeaders,
    body,
    isBase64Encoded,
    queryStringParameters,
    multiValueQueryStringParameters,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      requestId: randomUUID(),
      identity: { sourceIp: '127.0.0.1', userArn: null },
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}

/** A Lambda context with plenty of time left. */
export function testContext(): Context {
  return {
    awsRequestId: randomUUID(),
    getRemainingTimeInMillis: () => 60_000,
  } as unknown as Context;
}

/** A response with its body parsed. */
export interface TestResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  raw: APIGatewayProxyResult;
}

/** An API handler over a dynalite-backed test ledger. */
export interface TestApi {
  ledger: TestLedger;
  handler: ApiHandler;
  call(request: TestRequest): Promise<TestResponse>;
  /** Items in the table: "no record created" is checked against the store, not the response. */
  recordCount(): Promise<number>;
}

/** Builds the handler under test on a fresh table. */
export async function testApi(
  client: DynamoDBClient,
  tools: AnyTool[],
  config: Partial<LedgerConfig> = {},
): Promise<TestApi> {
  const table = await freshTable(client);
  const ledger = testLedger(client, table, tools, config);
  const handler = createApiHandler({ deps: ledger.deps }, new BearerTokenAuthenticator(TOKENS));
  return {
    ledger,
    handler,
    async call(request) {
      const raw = await handler(toEvent(request), testContext());
      return parse(raw);
    },
    async recordCount() {
      const out = await client.send(
        new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }),
      );
      return out.Count ?? 0;
    },
  };
}

/** Parses a handler result (every body this API sends is JSON). */
export function parse(raw: APIGatewayProxyResult): TestResponse {
  return {
    status: raw.statusCode,
    headers: (raw.headers ?? {}) as Record<string, string>,
    body: JSON.parse(raw.body) as Record<string, unknown>,
    raw,
  };
}

/** Waits until a condition holds (polling, bounded), for "while the first call is in flight". */
export async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Everything written to stdout and stderr while `fn` runs (the Powertools logger writes to both). */
export async function captureOutput<T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const lines: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const capture = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = capture;
  process.stderr.write = capture;
  try {
    return { result: await fn(), lines };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}
