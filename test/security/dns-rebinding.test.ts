import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { getOperation, postOperation, rawRequest } from '../e2e/api-client';

/**
 * DNS rebinding against local mode: a web page the developer visits rebinds its own name to 127.0.0.1
 * and calls local mode as a same-origin request (no CORS preflight), sending its own name in `Host`
 * and `Origin`. With the well-known token of earlier versions (`dev-token`) it could run tools as the
 * local agent. Local mode as a child process, attacked over HTTP as such a page would.
 */

const ATTACKER = 'attacker.example';

describe('local mode refuses a DNS-rebinding web page', () => {
  let stack: LocalStackProcess;
  let dataDir: string;
  let port: string;

  beforeAll(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'tool-ledger-rebinding-')), 'data');
    // No TOOL_LEDGER_TOKENS: the tokens are the ones local mode makes for the data folder.
    stack = await startLocalStack({ dataDir });
    port = new URL(stack.api).port;
  });

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    if (dataDir) await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  /** A request as the rebinding page's browser sends it, with the agent token it would need. */
  function asPage(
    route: string,
    init: {
      method?: string;
      host?: string;
      origin?: string | null;
      token?: string;
      body?: unknown;
      key?: string;
    },
  ) {
    const headers: Record<string, string> = {
      host: init.host ?? `${ATTACKER}:${port}`,
      authorization: `Bearer ${init.token ?? stack.tokens.agent}`,
      'content-type': 'application/json',
    };
    if (init.origin !== null) headers.origin = init.origin ?? `http://${ATTACKER}:${port}`;
    if (init.key !== undefined) headers['idempotency-key'] = init.key;
    const body = Buffer.from(init.body === undefined ? '' : JSON.stringify(init.body));
    return rawRequest(
      stack.api,
      route,
      init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers,
      body,
    );
  }

  it('a tool call with the page’s Host and Origin is 403 host_not_allowed: nothing runs, no record', async () => {
    const res = await asPage('/v1/operations', {
      key: 'rebind-1',
      body: { tool: 'workspace.write_file', arguments: { path: 'pwned.txt', content: 'x' } },
    });
    expect(res.status).toBe(403);
    expect(res.contentType).toContain('application/problem+json');
    expect(JSON.parse(res.text)).toMatchObject({ code: 'host_not_allowed', status: 403 });
    await expect(stat(path.join(dataDir, 'workspace', 'local', 'pwned.txt'))).rejects.toThrow();
    expect((await getOperation(stack.api, 'rebind-1', stack.tokens.agent)).status).toBe(404);
  });

  it('every route refuses it, /mcp and unknown paths included, before authentication', async () => {
    const mcp = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'workspace.write_file',
        arguments: { path: 'pwned.txt', content: 'x' },
        _meta: { 'io.tool-ledger/operation-id': 'rebind-mcp' },
      },
    };
    for (const [route, body] of [
      ['/mcp', mcp],
      ['/v1/tools', undefined],
      ['/v1/operations/rebind-1', undefined],
      ['/v1/operations?state=uncertain', undefined],
      ['/v1/reconciliations', {}],
      ['/nothing-here', undefined],
    ] as const) {
      const res = await asPage(route, { body, token: 'not-a-token' });
      expect(res.status, route).toBe(403);
      expect(JSON.parse(res.text), route).toMatchObject({ code: 'host_not_allowed' });
    }
    await expect(stat(path.join(dataDir, 'workspace', 'local', 'pwned.txt'))).rejects.toThrow();
  });

  it('the machine’s own Host with another Origin is 403 origin_not_allowed', async () => {
    for (const origin of [
      `http://${ATTACKER}:${port}`,
      'null',
      `http://127.0.0.1:${Number(port) + 1}`,
      `https://127.0.0.1:${port}`,
    ]) {
      const res = await asPage('/v1/tools', { host: `127.0.0.1:${port}`, origin });
      expect(res.status, origin).toBe(403);
      expect(JSON.parse(res.text), origin).toMatchObject({ code: 'origin_not_allowed' });
    }
  });

  it('a Host naming loopback with another port is refused too', async () => {
    const res = await asPage('/v1/tools', { host: `127.0.0.1:${Number(port) + 1}`, origin: null });
    expect(JSON.parse(res.text)).toMatchObject({ code: 'host_not_allowed' });
  });

  it('the machine’s own clients are served: 127.0.0.1, localhost and [::1] with the port, with or without their own Origin', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
      const res = await asPage('/v1/tools', { host, origin: null });
      expect(res.status, host).toBe(200);
    }
    const sameOrigin = await asPage('/v1/tools', {
      host: `localhost:${port}`,
      origin: `http://localhost:${port}`,
    });
    expect(sameOrigin.status).toBe(200);
    const call = await postOperation(stack.api, {
      token: stack.tokens.agent,
      key: 'own-1',
      body: { tool: 'workspace.write_file', arguments: { path: 'own.txt', content: 'ok' } },
    });
    expect(call.json).toMatchObject({ state: 'succeeded' });
  });

  it('the local DynamoDB and SQS refuse the page too (they check no signature), and still serve the SDKs', async () => {
    for (const endpoint of [stack.dynamodb, stack.sqs]) {
      const target = endpoint === stack.dynamodb ? 'DynamoDB_20120810.ListTables' : 'AmazonSQS.ListQueues';
      const own = new URL(endpoint);
      const headers = (host: string) => ({
        host,
        'x-amz-target': target,
        'content-type':
          endpoint === stack.dynamodb ? 'application/x-amz-json-1.0' : 'application/x-amz-json-1.0',
        authorization:
          'AWS4-HMAC-SHA256 Credential=a/20260101/us-east-1/x/aws4_request, SignedHeaders=host, Signature=0',
        'x-amz-date': '20260101T000000Z',
      });
      const refused = await rawRequest(
        endpoint,
        '/',
        'POST',
        headers(`${ATTACKER}:${own.port}`),
        Buffer.from('{}'),
      );
      expect(refused.status, endpoint).toBe(403);
      expect(refused.text, endpoint).toContain('host_not_allowed');
      const served = await rawRequest(endpoint, '/', 'POST', headers(own.host), Buffer.from('{}'));
      expect(served.status, endpoint).not.toBe(403);
    }
  });
});

describe('local mode ships no guessable token', () => {
  let stack: LocalStackProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'tool-ledger-tokens-')), 'data');
  });
  afterAll(async () => {
    await stack?.kill();
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  it('makes an agent+operator and an approver token at the data folder’s first start: private, printed, kept across restarts', async () => {
    stack = await startLocalStack({ dataDir });
    const file = path.join(dataDir, 'tokens');
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const spec = (await readFile(file, 'utf8')).trim();
    expect(spec).toMatch(/^tl_[A-Za-z0-9_-]{43}=local:agent\+operator,tl_[A-Za-z0-9_-]{43}=local:approver$/);
    expect(stack.tokens.agent).not.toBe(stack.tokens.approver);
    // The banner prints both, and the file they are kept in (it is written right after the ready line).
    const started = stack;
    await vi.waitFor(() =>
      expect(started.stdoutLines().some((l) => l.startsWith('Data folder:'))).toBe(true),
    );
    const banner = stack.output();
    expect(banner).toContain(stack.tokens.agent);
    expect(banner).toContain(stack.tokens.approver);
    expect(banner).toContain(`kept in ${file}`);
    // The old well-known token is nobody's.
    const old = await postOperation(stack.api, {
      token: 'dev-token',
      key: 'old-token-1',
      body: { tool: 'workspace.write_file', arguments: { path: 'old.txt', content: 'x' } },
    });
    expect(old.status).toBe(401);
    const agent = stack.tokens.agent;
    await stack.stop();
    stack = await startLocalStack({ dataDir });
    expect(stack.tokens.agent).toBe(agent);
    const ok = await postOperation(stack.api, {
      token: agent,
      key: 'kept-1',
      body: { tool: 'workspace.write_file', arguments: { path: 'kept.txt', content: 'x' } },
    });
    expect(ok.json).toMatchObject({ state: 'succeeded' });
  });
});
