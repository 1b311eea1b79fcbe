import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  NotAppliedError,
  TerminalToolError,
  type ToolContext,
  UncertainOutcomeError,
} from '../../functions/domain/tool';
import type { ToolEnvironment } from '../../functions/tools/registry';
import { type Resolver, webhookPost } from '../../functions/tools/webhook-post';
import { startServer, type TestServer, toolContext } from './tool-context';

const localEnv = (allow: string[], extra: Partial<ToolEnvironment> = {}): ToolEnvironment => ({
  workspaceRoot: '/nonexistent',
  webhookAllow: allow,
  local: true,
  ...extra,
});

/** Runs execute and returns what it threw (or fails the test if it returned). */
async function failure(promise: Promise<unknown>): Promise<Error & { code?: string; status?: number }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string; status?: number };
  }
  throw new Error('expected execute to throw');
}

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('webhook.post', () => {
  const servers: TestServer[] = [];
  let tool: ReturnType<typeof webhookPost>;
  let ctx: ToolContext;

  async function server(...args: Parameters<typeof startServer>): Promise<TestServer> {
    const started = await startServer(...args);
    servers.push(started);
    return started;
  }

  beforeEach(() => {
    tool = webhookPost(localEnv(['http://127.0.0.1', 'http://localhost']));
    ctx = toolContext();
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  const parse = (url: string, json: unknown = { ok: true }, headers?: Record<string, string>) =>
    tool.schema.parse(headers === undefined ? { url, json } : { url, json, headers });

  it('is a write tool on http, without reconcile', () => {
    expect(tool).toMatchObject({ name: 'webhook.post', effect: 'write', targetClass: 'http' });
    expect(tool.reconcile).toBeUndefined();
  });

  describe('2xx: succeeded', () => {
    it('POSTs canonical JSON with the quoted downstream key and returns the parsed body', async () => {
      const target = await server((_req, res) => {
        res.writeHead(201, { 'content-type': 'application/json; charset=utf-8' });
        res.end('{"id":7,"ok":true}');
      });
      const result = await tool.execute(parse(`${target.origin}/hook?x=1#frag`, { b: [1, 2], a: 'é' }), ctx);
      expect(result).toEqual({ status: 201, body: { id: 7, ok: true }, truncated: false });
      const [seen] = target.requests;
      expect(seen?.method).toBe('POST');
      expect(seen?.url).toBe('/hook?x=1');
      expect(seen?.body).toBe('{"a":"é","b":[1,2]}');
      expect(seen?.headers['content-type']).toBe('application/json');
      expect(seen?.headers['idempotency-key']).toBe(`"${ctx.downstreamKey}"`);
      expect(seen?.rawHeaders.filter((h) => h.toLowerCase() === 'idempotency-key')).toHaveLength(1);
    });

    it('sends the same key on every attempt of the operation', async () => {
      const target = await server((_req, res) => res.end());
      await tool.execute(parse(`${target.origin}/`), ctx);
      await tool.execute(parse(`${target.origin}/`), { ...ctx, attempt: 2 });
      expect(target.requests.map((r) => r.headers['idempotency-key'])).toEqual([
        `"${ctx.downstreamKey}"`,
        `"${ctx.downstreamKey}"`,
      ]);
    });

    it('returns text bodies as text and empty bodies as null', async () => {
      const text = await server((_req, res) => res.end('accepted'));
      expect(await tool.execute(parse(`${text.origin}/`), ctx)).toEqual({
        status: 200,
        body: 'accepted',
        truncated: false,
      });
      const empty = await server((_req, res) => {
        res.writeHead(204);
        res.end();
      });
      expect(await tool.execute(parse(`${empty.origin}/`), ctx)).toEqual({
        status: 204,
        body: null,
        truncated: false,
      });
    });

    it('keeps a JSON body that is not I-JSON as text', async () => {
      const target = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"a":1,"a":2}');
      });
      expect(await tool.execute(parse(`${target.origin}/`), ctx)).toMatchObject({ body: '{"a":1,"a":2}' });
    });

    it('truncates a large body, and sanitizeResult keeps the stored result small', async () => {
      const target = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: 'x'.repeat(200_000) }));
      });
      const result = (await tool.execute(parse(`${target.origin}/`), ctx)) as {
        body: string;
        truncated: boolean;
      };
      expect(result.truncated).toBe(true);
      expect(typeof result.body).toBe('string');
      expect(Buffer.byteLength(result.body)).toBeLessThanOrEqual(16 * 1024);
      const controlChars = { status: 200, body: '\u0001'.repeat(16 * 1024), truncated: false };
      const stored = tool.sanitizeResult?.(controlChars, parse(`${target.origin}/`));
      expect(JSON.stringify(stored).length).toBeLessThanOrEqual(17 * 1024);
      expect(stored).toMatchObject({ status: 200, truncated: true });
    });

    it('adds caller x- headers, lowercased, and never lets them replace its own', async () => {
      const target = await server((_req, res) => res.end());
      const args = parse(`${target.origin}/`, 1, { 'X-Trace-Id': ' abc-123 ' });
      expect(args.headers).toEqual({ 'x-trace-id': 'abc-123' });
      // Even arguments that bypassed the schema cannot override the key or the framing headers.
      const forged = {
        ...args,
        headers: { 'idempotency-key': '"evil"', 'content-type': 'text/plain', host: 'evil' },
      };
      await tool.execute(forged, ctx);
      await tool.execute(args, ctx);
      expect(target.requests[0]?.headers['idempotency-key']).toBe(`"${ctx.downstreamKey}"`);
      expect(target.requests[0]?.headers['content-type']).toBe('application/json');
      expect(target.requests[0]?.headers.host).toBe(`127.0.0.1:${target.port}`);
      expect(target.requests[1]?.headers['x-trace-id']).toBe('abc-123');
    });
  });

  describe('schema', () => {
    const url = 'http://127.0.0.1:9/hook';

    it.each([
      ['Idempotency-Key', '"k"'],
      ['Authorization', 'Bearer t'],
      ['Host', 'evil.example'],
      ['Content-Type', 'text/plain'],
      ['Content-Length', '1'],
      ['Cookie', 'a=b'],
      ['x-forwarded-for', '10.0.0.1'],
      ['X-Idempotency-Key', 'other'],
      ['x-http-method-override', 'DELETE'],
      ['x-ok', 'line\r\nInjected: yes'],
      ['x-ok', 'tab\there'],
      ['x-ok', 'naïve'],
      ['x_under', 'v'],
    ])('refuses the header %s: %j', (name, value) => {
      expect(tool.schema.safeParse({ url, json: {}, headers: { [name]: value } }).success).toBe(false);
    });

    it('refuses more than 20 headers and the same name twice in different cases', () => {
      const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']));
      expect(tool.schema.safeParse({ url, json: {}, headers: many }).success).toBe(false);
      expect(tool.schema.safeParse({ url, json: {}, headers: { 'X-A': '1', 'x-a': '2' } }).success).toBe(
        false,
      );
    });

    it('normalizes the URL and drops empty headers so the digest is stable', () => {
      expect(tool.schema.parse({ url: 'HTTP://127.0.0.1:9/a/../hook#x', json: {}, headers: {} })).toEqual({
        url,
        json: {},
      });
    });

    it('refuses unknown keys and non-JSON bodies', () => {
      expect(tool.schema.safeParse({ url, json: {}, method: 'PUT' }).success).toBe(false);
      expect(tool.schema.safeParse({ url, json: () => 1 }).success).toBe(false);
      expect(tool.schema.safeParse({ url }).success).toBe(false);
    });

    it('never repeats the URL or header values in its messages', () => {
      const result = tool.schema.safeParse({
        url: 'http://secret-host.example/SECRET',
        json: {},
        headers: { 'x-ok': 'SECRET\n' },
      });
      expect(result.success).toBe(false);
      expect(JSON.stringify(result.error?.issues.map((i) => i.message))).not.toMatch(/secret/i);
    });
  });

  describe('3xx and 4xx: terminal, status kept', () => {
    it('does not follow a redirect: the target is never hit', async () => {
      const redirectTarget = await server((_req, res) => res.end('should not be reached'));
      const redirecting = await server((_req, res) => {
        res.writeHead(307, { location: `${redirectTarget.origin}/elsewhere` });
        res.end();
      });
      const error = await failure(tool.execute(parse(`${redirecting.origin}/`), ctx));
      expect(error).toBeInstanceOf(TerminalToolError);
      expect(error).toMatchObject({ code: 'http_307', status: 307 });
      // A followed redirect would have been answered by the target before execute settled: no wait.
      expect(redirectTarget.requests).toHaveLength(0);
    });

    it.each([400, 401, 403, 404, 410, 422])('%i is terminal with the status', async (status) => {
      const target = await server((_req, res) => {
        res.writeHead(status);
        res.end('{"error":"nope"}');
      });
      const error = await failure(tool.execute(parse(`${target.origin}/`), ctx));
      expect(error).toBeInstanceOf(TerminalToolError);
      expect(error).toMatchObject({ code: `http_${status}`, status });
    });
  });

  describe('uncertain outcomes', () => {
    it.each([408, 409, 429, 500, 502, 503, 504])('%i is uncertain with the status', async (status) => {
      const target = await server((_req, res) => {
        res.writeHead(status);
        res.end();
      });
      const error = await failure(tool.execute(parse(`${target.origin}/`), ctx));
      expect(error).toBeInstanceOf(UncertainOutcomeError);
      expect(error).toMatchObject({ code: `http_${status}`, status });
    });

    it('a server that reads the body then resets the connection is uncertain', async () => {
      const target = await server((req) => req.socket.resetAndDestroy());
      const error = await failure(tool.execute(parse(`${target.origin}/`, { n: 1 }), ctx));
      expect(error).toBeInstanceOf(UncertainOutcomeError);
      expect(error).toMatchObject({ code: 'connection_reset' });
      expect(target.requests[0]?.body).toBe('{"n":1}');
    });

    it('a slow server past the deadline is uncertain (timeout), and the request did arrive', async () => {
      // The deadline fires once the request has arrived (as AbortSignal.timeout would, with its
      // TimeoutError), not after a fixed 150 ms that a busy machine could spend before sending. The
      // server never answers, so only the signal can end the call; no stopwatch.
      const target = await server(() => undefined);
      const deadline = new AbortController();
      const pending = tool.execute(parse(`${target.origin}/`), { ...ctx, signal: deadline.signal });
      while (target.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      deadline.abort(new DOMException('the deadline passed', 'TimeoutError'));
      const error = await failure(pending);
      expect(error).toBeInstanceOf(UncertainOutcomeError);
      expect(error).toMatchObject({ code: 'timeout' });
      expect(target.requests).toHaveLength(1);
    });

    it('an abort after sending is uncertain (aborted)', async () => {
      const target = await server(() => undefined);
      const controller = new AbortController();
      const pending = tool.execute(parse(`${target.origin}/`), { ...ctx, signal: controller.signal });
      while (target.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      const error = await failure(pending);
      expect(error).toBeInstanceOf(UncertainOutcomeError);
      expect(error).toMatchObject({ code: 'aborted' });
    });

    it('a 2xx whose body is cut off is still succeeded, marked truncated', async () => {
      const target = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
        res.write('partial', () => res.socket?.destroy());
      });
      expect(await tool.execute(parse(`${target.origin}/`), ctx)).toEqual({
        status: 200,
        body: 'partial',
        truncated: true,
      });
    });
  });

  describe('not applied: nothing was sent', () => {
    it('connection refused', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const error = await failure(tool.execute(parse(`http://127.0.0.1:${port}/`), ctx));
      expect(error).toBeInstanceOf(NotAppliedError);
      expect(error).toMatchObject({ code: 'connection_refused' });
    });

    it('DNS failure', async () => {
      const resolve: Resolver = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      const named = webhookPost(localEnv(['http://localhost']), { resolve });
      const error = await failure(
        named.execute(named.schema.parse({ url: 'http://localhost:9/', json: 1 }), ctx),
      );
      expect(error).toBeInstanceOf(NotAppliedError);
      expect(error).toMatchObject({ code: 'dns_failure' });
    });

    it('an abort while resolving (even with a resolver that never answers)', async () => {
      const resolve: Resolver = () => new Promise(() => undefined);
      const named = webhookPost(localEnv(['http://localhost']), { resolve });
      const args = named.schema.parse({ url: 'http://localhost:9/', json: 1 });
      const error = await failure(named.execute(args, { ...ctx, signal: AbortSignal.timeout(50) }));
      expect(error).toBeInstanceOf(NotAppliedError);
      expect(error).toMatchObject({ code: 'aborted_before_send' });
    });

    it('an attempt whose deadline passed before it started', async () => {
      const target = await server((_req, res) => res.end());
      const controller = new AbortController();
      controller.abort();
      const error = await failure(
        tool.execute(parse(`${target.origin}/`), { ...ctx, signal: controller.signal }),
      );
      expect(error).toBeInstanceOf(NotAppliedError);
      expect(error).toMatchObject({ code: 'aborted_before_send' });
      expect(target.requests).toHaveLength(0);
    });

    it('TLS handshake failure (an https URL on a plain-http port): the handler never runs', async () => {
      const target = await server((_req, res) => res.end());
      const secure = webhookPost(localEnv(['https://127.0.0.1']));
      const args = secure.schema.parse({ url: `https://127.0.0.1:${target.port}/`, json: 1 });
      const error = await failure(secure.execute(args, ctx));
      expect(error).toBeInstanceOf(NotAppliedError);
      expect(error).toMatchObject({ code: 'tls_handshake_failed' });
      expect(target.requests).toHaveLength(0);
    });

    it('an abort during the TLS handshake (a server that never answers the ClientHello)', async () => {
      const sockets: Socket[] = [];
      const silent = createServer((socket) => {
        sockets.push(socket);
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as AddressInfo).port;
      try {
        const secure = webhookPost(localEnv(['https://127.0.0.1']));
        const args = secure.schema.parse({ url: `https://127.0.0.1:${port}/`, json: 1 });
        const error = await failure(secure.execute(args, { ...ctx, signal: AbortSignal.timeout(100) }));
        expect(error).toBeInstanceOf(NotAppliedError);
        expect(error).toMatchObject({ code: 'aborted_before_send' });
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });

    it.skipIf(!hasOpenssl())(
      'TLS handshake failure (an untrusted certificate): the handler never runs',
      async () => {
        const dir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-tls-'));
        try {
          execFileSync(
            'openssl',
            [
              'req',
              '-x509',
              '-newkey',
              'ec',
              '-pkeyopt',
              'ec_paramgen_curve:prime256v1',
              '-nodes',
              '-days',
              '1',
            ].concat([
              '-subj',
              '/CN=127.0.0.1',
              '-keyout',
              path.join(dir, 'key.pem'),
              '-out',
              path.join(dir, 'cert.pem'),
            ]),
            { stdio: 'ignore' },
          );
          let hits = 0;
          const tlsServer: Server = https.createServer(
            {
              key: await readFile(path.join(dir, 'key.pem')),
              cert: await readFile(path.join(dir, 'cert.pem')),
            },
            (_req, res) => {
              hits += 1;
              res.end();
            },
          );
          await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
          const port = (tlsServer.address() as AddressInfo).port;
          const secure = webhookPost(localEnv(['https://127.0.0.1']));
          const error = await failure(
            secure.execute(secure.schema.parse({ url: `https://127.0.0.1:${port}/`, json: 1 }), ctx),
          );
          tlsServer.closeAllConnections();
          await new Promise((resolve) => tlsServer.close(resolve));
          expect(error).toBeInstanceOf(NotAppliedError);
          expect(error).toMatchObject({ code: 'tls_handshake_failed' });
          expect(hits).toBe(0);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    );
  });

  describe('SSRF guard', () => {
    it('refuses, in the schema, origins that are not allowed', () => {
      const strict = webhookPost(localEnv(['http://127.0.0.1:8080']));
      for (const url of [
        'http://127.0.0.1:8081/', // other port
        'https://127.0.0.1:8080/', // other scheme
        'http://localhost:8080/', // same machine, other host
        'http://user:pw@127.0.0.1:8080/', // userinfo
        'http://169.254.169.254/latest/meta-data/', // metadata
        'http://0.0.0.0:8080/',
        'http://[::1]:8080/',
        'http://[::ffff:127.0.0.1]:8080/',
        'file:///etc/passwd',
      ]) {
        expect(strict.schema.safeParse({ url, json: {} }).success, url).toBe(false);
      }
      expect(strict.schema.safeParse({ url: 'http://127.0.0.1:8080/ok', json: {} }).success).toBe(true);
    });

    it('AWS mode: https only unless the entry says http explicitly', async () => {
      const target = await server((_req, res) => res.end());
      const implicit = webhookPost(localEnv([`127.0.0.1:${target.port}`], { local: false }));
      expect(implicit.schema.safeParse({ url: `${target.origin}/`, json: {} }).success).toBe(false);
      expect(implicit.schema.safeParse({ url: `https://127.0.0.1:${target.port}/`, json: {} }).success).toBe(
        true,
      );
      const portless = webhookPost(localEnv(['http://127.0.0.1'], { local: false }));
      expect(portless.schema.safeParse({ url: `${target.origin}/`, json: {} }).success).toBe(false);
      const explicit = webhookPost(localEnv([`http://127.0.0.1:${target.port}`], { local: false }));
      const result = await explicit.execute(
        explicit.schema.parse({ url: `${target.origin}/`, json: {} }),
        ctx,
      );
      expect(result).toMatchObject({ status: 200 });
    });

    it.each([
      ['loopback', ['127.0.0.1']],
      ['mapped loopback', ['::ffff:127.0.0.1']],
      ['metadata', ['169.254.169.254']],
      ['private', ['10.0.0.7']],
      ['unspecified', ['0.0.0.0']],
      ['IPv6 unique local', ['fd00:ec2::254']],
      ['one bad among good', ['93.184.215.14', '192.168.1.1']],
    ])('refuses a listed name that resolves to a %s address, sending nothing', async (_label, answers) => {
      const target = await server((_req, res) => res.end());
      const resolve: Resolver = async () =>
        answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
      const named = webhookPost(localEnv([`http://hooks.example.com:${target.port}`]), { resolve });
      const args = named.schema.parse({ url: `http://hooks.example.com:${target.port}/`, json: 1 });
      const error = await failure(named.execute(args, ctx));
      expect(error).toBeInstanceOf(TerminalToolError);
      expect(error).toMatchObject({ code: 'address_not_allowed' });
      expect(target.requests).toHaveLength(0);
    });

    it('refuses localhost resolving outside loopback', async () => {
      const resolve: Resolver = async () => [{ address: '10.0.0.1', family: 4 }];
      const named = webhookPost(localEnv(['http://localhost']), { resolve });
      const error = await failure(
        named.execute(named.schema.parse({ url: 'http://localhost:9/', json: 1 }), ctx),
      );
      expect(error).toMatchObject({ code: 'address_not_allowed' });
    });

    it('resolves once and connects to the checked address (no rebinding)', async () => {
      // The server listens on 127.0.0.2 only: the system's answer for localhost (127.0.0.1 / ::1)
      // would be refused, so success proves the connection went to the address the policy checked.
      const target = await server((_req, res) => res.end('pinned'), '127.0.0.2');
      let calls = 0;
      const resolve: Resolver = async () => {
        calls += 1;
        return calls === 1
          ? [{ address: '127.0.0.2', family: 4 }]
          : [{ address: '169.254.169.254', family: 4 }];
      };
      const named = webhookPost(localEnv(['http://localhost']), { resolve });
      const args = named.schema.parse({ url: `http://localhost:${target.port}/`, json: 1 });
      expect(await named.execute(args, ctx)).toMatchObject({ status: 200, body: 'pinned' });
      expect(calls).toBe(1);
      expect(target.requests[0]?.headers.host).toBe(`localhost:${target.port}`);
    });

    it('reaches a localhost entry through the system resolver', async () => {
      const target = await server((_req, res) => res.end('via dns'));
      const args = parse(`http://localhost:${target.port}/`);
      expect(await tool.execute(args, ctx)).toMatchObject({ status: 200, body: 'via dns' });
    });

    it('checks the allow list again at execute time (a queued call after the list shrank)', async () => {
      const target = await server((_req, res) => res.end());
      const args = parse(`${target.origin}/`);
      const shrunk = webhookPost(localEnv(['http://localhost']));
      const error = await failure(shrunk.execute(args, ctx));
      expect(error).toMatchObject({ code: 'origin_not_allowed' });
      expect(target.requests).toHaveLength(0);
    });

    it('never puts the URL in error messages', async () => {
      const target = await server((_req, res) => {
        res.writeHead(404);
        res.end();
      });
      const error = await failure(
        tool.execute(parse(`${target.origin}/SECRET-PATH`, 1, { 'x-s': 'SECRET-VALUE' }), ctx),
      );
      expect(error.message).not.toContain('SECRET');
      expect(error.message).not.toContain(String(target.port));
    });
  });

  describe('downstreamIdempotent', () => {
    it('is true only for origins configured as deduplicating on Idempotency-Key', () => {
      const configured = webhookPost(
        localEnv(['http://127.0.0.1', 'https://hooks.example.com'], {
          webhookIdempotentOrigins: ['https://hooks.example.com'],
        }),
      );
      const parseWith = (url: string) => configured.schema.parse({ url, json: {} });
      expect(configured.downstreamIdempotent?.(parseWith('https://hooks.example.com/a'))).toBe(true);
      expect(configured.downstreamIdempotent?.(parseWith('http://127.0.0.1:9/a'))).toBe(false);
      expect(tool.downstreamIdempotent?.(parse('http://127.0.0.1:9/a'))).toBe(false);
    });
  });
});
