import { request } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiHandler, HttpAdapter } from '../../functions/local/http-adapter';

/**
 * Local mode's stand-in for API Gateway: the events it builds (REST proxy v1) and how it answers for
 * the handler. A recording handler stands in for the API, so the adapter alone is under test.
 */

const API = { name: 'test-api', timeoutMs: 2_000 };

let adapter: HttpAdapter | undefined;

afterEach(async () => {
  await adapter?.close(1_000);
  adapter = undefined;
});

async function serve(
  handler: ApiHandler,
  maxBodyBytes?: number,
): Promise<{ port: number; events: APIGatewayProxyEvent[]; contexts: Context[] }> {
  const events: APIGatewayProxyEvent[] = [];
  const contexts: Context[] = [];
  adapter = new HttpAdapter(
    async (event, context) => {
      events.push(event);
      contexts.push(context);
      return handler(event, context);
    },
    API,
    maxBodyBytes,
  );
  return { port: await adapter.listen(0), events, contexts };
}

function send(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string | string[]>; body?: Buffer },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const body = options.body ?? Buffer.alloc(0);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path,
        headers: { ...options.headers, 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const ok: ApiHandler = async () => ({ statusCode: 200, body: '{}' });

describe('local HTTP adapter', () => {
  it('builds a REST proxy event: every header value, raw path, decoded path parameters, query, request ID', async () => {
    const { port, events, contexts } = await serve(ok);
    await send(port, {
      path: '/v1/operations/run%2F42/approval?x=1&x=2&y=%20z',
      headers: { 'Idempotency-Key': ['a', 'b'], 'X-Custom': 'v', 'content-type': 'application/json' },
      body: Buffer.from('{"decision":"approve"}'),
    });
    const event = events[0] as APIGatewayProxyEvent;
    expect(event.httpMethod).toBe('POST');
    expect(event.path).toBe('/v1/operations/run%2F42/approval');
    expect(event.resource).toBe('/v1/operations/{id}/approval');
    expect(event.pathParameters).toEqual({ id: 'run/42' });
    expect(event.multiValueHeaders['Idempotency-Key']).toEqual(['a', 'b']);
    expect(event.headers['Idempotency-Key']).toBe('b');
    expect(event.headers['X-Custom']).toBe('v');
    expect(event.queryStringParameters).toEqual({ x: '2', y: ' z' });
    expect(event.multiValueQueryStringParameters).toEqual({ x: ['1', '2'], y: [' z'] });
    expect(event.body).toBe('{"decision":"approve"}');
    expect(event.isBase64Encoded).toBe(false);
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.requestContext.identity.sourceIp).toBe('127.0.0.1');
    expect(contexts[0]?.getRemainingTimeInMillis()).toBeLessThanOrEqual(API.timeoutMs);
  });

  it('passes a body that is not valid UTF-8 base64-encoded, and an empty body as null', async () => {
    const { port, events } = await serve(ok);
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    await send(port, { path: '/v1/operations', body: bytes });
    await send(port, { method: 'GET', path: '/v1/tools' });
    expect(events[0]).toMatchObject({ isBase64Encoded: true, body: bytes.toString('base64') });
    expect(events[1]).toMatchObject({ isBase64Encoded: false, body: null, queryStringParameters: null });
  });

  it("writes the handler's status, headers (multi-value too) and base64 body back", async () => {
    const { port } = await serve(
      async (): Promise<APIGatewayProxyResult> => ({
        statusCode: 201,
        headers: { 'Content-Type': 'application/json', Location: '/v1/operations/a' },
        multiValueHeaders: { 'X-Multi': ['1', '2'] },
        body: Buffer.from('{"ok":true}').toString('base64'),
        isBase64Encoded: true,
      }),
    );
    const res = await send(port, { path: '/v1/operations', body: Buffer.from('{}') });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe('/v1/operations/a');
    expect(res.headers['x-multi']).toBe('1, 2');
    expect(res.body.toString()).toBe('{"ok":true}');
  });

  it('answers like the gateway when the handler throws (502) or outlives its timeout (504), and keeps serving', async () => {
    let mode: 'throw' | 'hang' | 'ok' = 'throw';
    const { port } = await serve(async (event, context) => {
      if (mode === 'throw') throw new Error('boom');
      if (mode === 'hang') return new Promise(() => {});
      return ok(event, context);
    });
    const thrown = await send(port, { path: '/v1/tools', method: 'GET' });
    expect(thrown.status).toBe(502);
    expect(thrown.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(thrown.body.toString())).toMatchObject({ status: 502, code: 'internal_error' });
    mode = 'hang';
    const hung = await send(port, { path: '/v1/tools', method: 'GET' });
    expect(hung.status).toBe(504);
    expect(JSON.parse(hung.body.toString())).toMatchObject({ status: 504, code: 'gateway_timeout' });
    mode = 'ok';
    expect((await send(port, { path: '/v1/tools', method: 'GET' })).status).toBe(200);
  });

  it('refuses a body over the gateway quota with 413 problem+json without calling the handler', async () => {
    const { port, events } = await serve(ok, 1024);
    const res = await send(port, { path: '/v1/operations', body: Buffer.alloc(64 * 1024, 0x61) });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body.toString())).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(events).toHaveLength(0);
    expect((await send(port, { path: '/v1/tools', method: 'GET' })).status).toBe(200);
  });
});
