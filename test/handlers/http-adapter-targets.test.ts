import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { HttpAdapter, parseTarget } from '../../functions/local/http-adapter';
import { TOKENS } from '../http/support';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * The request target is the first thing local mode's API reads, before any authentication, so it is
 * whatever bytes a client put on the request line. These send raw request lines to the adapter in
 * front of the real API handler (on dynalite): every answer is a problem+json below 500. `//`, `//%zz`
 * and `http://[/v1/tools` were each a 500 from the adapter's URL parsing.
 */

const db = useDynalite();
let adapter: HttpAdapter;
let port: number;
let handled = 0;

beforeAll(async () => {
  const tool = new ScriptedTool('test.effect');
  const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
  const handler = createApiHandler({ deps: ledger.deps }, new BearerTokenAuthenticator(TOKENS));
  adapter = new HttpAdapter(
    async (event, context) => {
      handled += 1;
      return handler(event, context);
    },
    { name: 'target-test-api', timeoutMs: 30_000 },
  );
  port = await adapter.listen(0);
});
afterAll(async () => {
  await adapter.close(1_000);
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends one request line as given (no client library normalises it) and reads the whole answer. */
function sendRaw(target: string, token?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    socket.end(
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        (token ? `Authorization: Bearer ${token}\r\n` : '') +
        'Connection: close\r\n\r\n',
    );
  });
}

function expectProblem(res: RawResponse, target: string): { code: string } {
  expect(res.status, target).toBeGreaterThanOrEqual(400);
  expect(res.status, target).toBeLessThan(500);
  expect(res.headers['content-type'], target).toBe('application/problem+json');
  const body = JSON.parse(res.body) as { code: string; status: number };
  expect(body.status, target).toBe(res.status);
  return body;
}

describe('request targets before authentication', () => {
  it('a target that is no URL (http://[/v1/tools, *, host:port) is 400 validation_failed, and the handler is never called', async () => {
    for (const target of ['http://[/v1/tools', 'http://[', '*', '127.0.0.1:3000', 'file:///etc/passwd']) {
      const before = handled;
      for (const token of [undefined, 'operator-a']) {
        const res = await sendRaw(target, token);
        expect(res.status, target).toBe(400);
        expect(expectProblem(res, target)).toMatchObject({ code: 'validation_failed' });
      }
      expect(handled, target).toBe(before);
    }
  });

  it('a path that names no route (//, //%zz, /%zz) is 404 not_found for a caller, 401 for a stranger', async () => {
    for (const target of ['//', '//%zz', '/%zz', '//v1/tools', '/v1//tools', '/v1/operations/%zz/x']) {
      expect(expectProblem(await sendRaw(target, 'operator-a'), target)).toMatchObject({ code: 'not_found' });
      expect(expectProblem(await sendRaw(target), target)).toMatchObject({ code: 'unauthenticated' });
    }
  });

  it('the absolute form names the same resources as the origin form', async () => {
    const res = await sendRaw(`http://127.0.0.1:${port}/v1/tools`, 'agent-a');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toHaveProperty('tools');
  });

  it('whatever the target, the answer is below 500 and a problem+json when it is a refusal', async () => {
    const piece = fc.constantFrom(
      '/',
      '//',
      '%',
      '%zz',
      '%2F',
      '%00',
      '%C0%AF',
      '?',
      '??',
      '&',
      '=',
      '#',
      '[',
      ']',
      'http://',
      'https://',
      'http://[',
      '*',
      ':',
      '@',
      '.',
      '..',
      '\\',
      'v1',
      'operations',
      'tools',
      'approval',
      'resolution',
      'cursor=',
      'x',
    );
    const printable = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
    const target = fc.oneof(
      fc.array(piece, { minLength: 1, maxLength: 8 }).map((parts) => parts.join('')),
      fc.tuple(piece, printable).map(([a, b]) => a + b),
      printable,
    );
    await fc.assert(
      fc.asyncProperty(target, fc.constantFrom(undefined, 'operator-a', 'agent-a'), async (t, token) => {
        const res = await sendRaw(t, token);
        expect(res.status, t).toBeLessThan(500);
        if (res.status >= 400) expectProblem(res, t);
      }),
      { numRuns: 200 },
    );
  });
});

describe('parseTarget', () => {
  it('splits the origin form as sent and never throws', () => {
    expect(parseTarget('/v1/operations?limit=2')).toEqual({ path: '/v1/operations', query: 'limit=2' });
    expect(parseTarget('//%zz')).toEqual({ path: '//%zz', query: '' });
    expect(parseTarget('/a/../b?x#frag')).toEqual({ path: '/a/../b', query: 'x' });
    expect(parseTarget('http://h/v1/tools?x=1')).toEqual({ path: '/v1/tools', query: 'x=1' });
    expect(parseTarget('http://[/v1/tools')).toBeUndefined();
    fc.assert(fc.property(fc.string(), (t) => void parseTarget(t)));
  });
});
