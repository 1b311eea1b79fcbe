import { request as httpRequest } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Connection, resolveConnection } from '../../cli/connection';
import { type ConsoleServer, startConsoleServer } from '../../cli/console/server';
import { HttpOperatorApi } from '../../cli/operator-api';
import { type CliHarness, serveCli } from '../cli/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * The console's forwarder without a browser: the real API handler on dynalite behind it (the CLI
 * tests' harness), requests sent with exactly the headers a test chooses. What the page may ask for,
 * what it must send, and what the console answers when the API cannot.
 */

const db = useDynalite();
let tool: ScriptedTool;
let cli: CliHarness;
let server: ConsoleServer;
const SECRET = 'test-secret-of-this-run';

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  cli = await serveCli(db, [tool.tool]);
  server = await startConsoleServer({
    api: await connect(cli.endpoint, 'operator-a'),
    port: 0,
    secret: SECRET,
  });
});
afterEach(async () => {
  await server.close();
  await cli.close();
});

function connect(endpoint: string, token: string): Promise<HttpOperatorApi> {
  const connection: Connection = resolveConnection({ endpoint, token }, {});
  return HttpOperatorApi.connect(connection);
}

async function uncertain(id: string) {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const { record } = await cli.ledger.submit({ operationId: id, arguments: { target: id } });
  expect(record.state).toBe('uncertain');
  return record;
}

interface Answer {
  status: number;
  type: string | undefined;
  headers: Record<string, unknown>;
  body: Record<string, unknown>;
}

function send(
  path: string,
  options: { method?: string; body?: string; headers?: Record<string, string>; to?: ConsoleServer } = {},
): Promise<Answer> {
  const target = options.to ?? server;
  const headers: Record<string, string> = { 'x-tool-ledger-console': SECRET, ...options.headers };
  if (options.body !== undefined && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      new URL(path, target.origin),
      { method: options.method ?? 'GET', headers },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
        });
        res.on('end', () => {
          let body: Record<string, unknown> = {};
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            body = { text };
          }
          resolve({
            status: res.statusCode ?? 0,
            type: res.headers['content-type'],
            headers: res.headers,
            body,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the console forwarder', () => {
  it('serves the page without the secret, with a policy that allows only its own scripts and no framing', async () => {
    const page = await send('/', { headers: { 'x-tool-ledger-console': '' } });
    expect(page.status).toBe(200);
    expect(page.type).toBe('text/html; charset=utf-8');
    expect(String(page.headers['content-security-policy'])).toContain("script-src 'self'");
    expect(String(page.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect((await send('/views.js')).type).toBe('text/javascript; charset=utf-8');
    expect(await send('/../package.json')).toMatchObject({ status: 404 });
    expect(server.url).toBe(`${server.origin}/#secret=${SECRET}`);
  });

  it('forwards the listing with the API cursor and one operation with its history and arguments', async () => {
    for (const id of ['f-1', 'f-2', 'f-3']) await uncertain(id);
    const first = await send('/api/v1/operations?state=uncertain&limit=2');
    expect(first.status).toBe(200);
    expect((first.body.operations as { operation_id: string }[]).map((o) => o.operation_id)).toEqual([
      'f-3',
      'f-2',
    ]);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await send(
      `/api/v1/operations?state=uncertain&limit=2&cursor=${encodeURIComponent(String(first.body.next_cursor))}`,
    );
    expect((second.body.operations as { operation_id: string }[]).map((o) => o.operation_id)).toEqual([
      'f-1',
    ]);
    expect(second.body.next_cursor).toBeNull();

    const one = await send('/api/v1/operations/f-1?include=arguments,history');
    expect(one.body).toMatchObject({ operation_id: 'f-1', state: 'uncertain', arguments: { target: 'f-1' } });
    expect((one.body.history as { to: string }[]).map((e) => e.to)).toEqual(['pending', 'uncertain']);
    const tools = await send('/api/v1/tools');
    expect((tools.body.tools as { name: string }[]).map((t) => t.name)).toEqual(['test.effect']);
  });

  it('passes the API’s problems on with their code and title (a bad state filter, an unknown operation)', async () => {
    const bad = await send('/api/v1/operations?state=nonsense');
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', title: 'The request is invalid' },
    });
    expect(bad.type).toBe('application/problem+json; charset=utf-8');
    expect(await send('/api/v1/operations/nobody-has-this')).toMatchObject({
      status: 404,
      body: { code: 'not_found', title: 'Not found' },
    });
  });

  it('refuses a resolution without the attempt shown, and changes nothing', async () => {
    await uncertain('r-1');
    const refused = await send('/api/v1/operations/r-1/resolution', {
      method: 'POST',
      body: '{"outcome":"applied"}',
    });
    expect(refused).toMatchObject({
      status: 400,
      body: { code: 'validation_failed', issues: [{ path: 'attempt' }] },
    });
    expect((await send('/api/v1/operations/r-1')).body.state).toBe('uncertain');

    const done = await send('/api/v1/operations/r-1/resolution', {
      method: 'POST',
      body: JSON.stringify({ outcome: 'applied', attempt: 1, result: { seen: true } }),
    });
    expect(done).toMatchObject({ status: 200, body: { state: 'succeeded', result: { seen: true } } });
    const stale = await send('/api/v1/operations/r-1/resolution', {
      method: 'POST',
      body: JSON.stringify({ outcome: 'failed', attempt: 1 }),
    });
    expect(stale).toMatchObject({
      status: 409,
      body: { code: 'state_changed', operation: { state: 'succeeded' } },
    });
  });

  it('refuses other content types, bodies that are not JSON and bodies over 256 KiB', async () => {
    await uncertain('b-1');
    const path = '/api/v1/operations/b-1/resolution';
    expect(
      await send(path, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
    ).toMatchObject({
      status: 415,
      body: { code: 'unsupported_media_type' },
    });
    expect(await send(path, { method: 'POST', body: '{' })).toMatchObject({
      status: 400,
      body: { code: 'validation_failed' },
    });
    const huge = JSON.stringify({ outcome: 'applied', attempt: 1, result: 'x'.repeat(300 * 1024) });
    expect(await send(path, { method: 'POST', body: huge })).toMatchObject({
      status: 413,
      body: { code: 'payload_too_large' },
    });
    expect((await send('/api/v1/operations/b-1')).body.state).toBe('uncertain');
  });

  it('answers deadline_exceeded when the API does not answer within the CLI’s deadline, naming no credential', async () => {
    // An API that takes every connection and drops it unanswered: the CLI's client retries a lost
    // answer until its deadline, then gives up. (Port 9 was used here once; fetch refuses that port
    // outright, which the client now reports at once as unreachable.)
    const dropping = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    const { port } = dropping.address() as AddressInfo;
    const closed = await startConsoleServer({
      api: await connect(`http://127.0.0.1:${port}`, 'operator-a'),
      port: 0,
      secret: SECRET,
    });
    try {
      const answer = await send('/api/v1/tools', { to: closed });
      expect(answer).toMatchObject({
        status: 504,
        body: { code: 'deadline_exceeded', title: 'The API did not answer in time' },
      });
      expect(JSON.stringify(answer.body)).not.toContain('operator-a');
    } finally {
      await closed.close();
      await new Promise<void>((resolve) => dropping.close(() => resolve()));
    }
  });
});
