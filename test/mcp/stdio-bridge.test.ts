import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main';
import { MCP_META_ID_SOURCE } from '../../cli/mcp-session-window';
import { HttpAdapter } from '../../functions/local/http-adapter';
import { META_REPLAYED } from '../../functions/mcp/protocol';
import { type TestApi, testApi } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type SigV4Gateway, startSigV4Gateway } from './sigv4-gateway';
import { body, callWithId } from './support';

/**
 * `npx tool-ledger mcp`, the stdio bridge, driven by the SDK's own `StdioClientTransport`, which
 * launches it as a desktop MCP client would. Behind it: the API handler on dynalite, served over HTTP
 * by local mode's adapter.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const db = useDynalite();
let api: TestApi;
let http: HttpAdapter;
let endpoint: string;
let tool: ScriptedTool;

async function bridge(...extra: string[]): Promise<Client> {
  return launch(['--endpoint', endpoint, '--token', 'agent-a', ...extra]);
}

/** Launches `tool-ledger mcp` with these arguments and environment, as a desktop MCP client does. */
async function launch(args: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'desktop-client', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['bin/tool-ledger.mjs', 'mcp', ...args],
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stderr: 'pipe',
    }),
  );
  return client;
}

/** Dummy AWS credentials, handed to the bridge the way a desktop client passes its environment. */
const CREDENTIALS = {
  accessKeyId: 'AKIDBRIDGETEST000001',
  secretAccessKey: 'bridge-test-secret-not-a-real-key',
  sessionToken: 'bridge-test-session-token',
};

function awsEnvironment(secretAccessKey = CREDENTIALS.secretAccessKey): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
    AWS_SESSION_TOKEN: CREDENTIALS.sessionToken,
    // No shared config or instance metadata: the environment is the only source of credentials.
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent/tool-ledger-test-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/tool-ledger-test-credentials',
  };
}

beforeAll(async () => {
  tool = new ScriptedTool('test.effect');
  api = await testApi(db.client, [tool.tool]);
  http = new HttpAdapter(api.handler, { name: 'api', timeoutMs: 29_000 });
  endpoint = `http://127.0.0.1:${await http.listen(0)}`;
});
afterAll(async () => {
  await http?.close(0);
});

describe('the stdio bridge', () => {
  it('lists the deployment’s tools and runs each operation once, replaying retries', async () => {
    const client = await bridge();
    try {
      expect(client.getServerVersion()?.name).toBe('tool-ledger');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['test.effect']);
      expect(tools[0]?.annotations).toEqual({ readOnlyHint: false });
      const first = await callWithId(client, 'test.effect', { target: 'a' }, 'stdio-1');
      expect(body(first)).toMatchObject({ operation_id: 'stdio-1', state: 'succeeded', replayed: false });
      const again = await callWithId(client, 'test.effect', { target: 'a' }, 'stdio-1');
      expect(again._meta?.[META_REPLAYED]).toBe(true);
      expect(tool.effects.filter((e) => e.operationId === 'stdio-1')).toHaveLength(1);
      const refused = await callWithId(client, 'test.effect', { target: 'a' });
      expect(body(refused)).toMatchObject({ code: 'idempotency_key_missing' });
    } finally {
      await client.close();
    }
  });

  it('an empty or unprintable operation ID gets the ledger’s refusal as a tool result, not a JSON-RPC internal error, and runs nothing', async () => {
    const client = await bridge();
    const started = tool.starts.length;
    try {
      for (const id of ['', 'has space', 'x'.repeat(256)]) {
        const refused = await callWithId(client, 'test.effect', { target: 'a' }, id);
        expect(refused.isError, JSON.stringify(id)).toBe(true);
        expect(String(body(refused).code), JSON.stringify(id)).toMatch(
          /^(validation_failed|idempotency_key_)/,
        );
      }
      expect(tool.starts).toHaveLength(started);
    } finally {
      await client.close();
    }
  });

  it('with --operation-ids per-call, a call without an ID becomes one operation of its own', async () => {
    const client = await bridge('--operation-ids', 'per-call');
    try {
      const result = await callWithId(client, 'test.effect', { target: 'b' });
      expect(body(result)).toMatchObject({ state: 'succeeded' });
      expect(String(body(result).operation_id)).toMatch(/^bridge:[0-9a-f-]{36}$/);
    } finally {
      await client.close();
    }
  });

  it('with --operation-ids session, the same tool and arguments replay within the window; other arguments run', async () => {
    const client = await bridge('--operation-ids', 'session', '--session-window', '600');
    try {
      const first = await callWithId(client, 'test.effect', { target: 'w' });
      const id = String(body(first).operation_id);
      expect(id).toMatch(/^session:[0-9a-f-]{36}:\d+$/);
      expect(first._meta?.[MCP_META_ID_SOURCE]).toBe('session-window');
      expect(body(first)).toMatchObject({ state: 'succeeded', replayed: false });
      const again = await callWithId(client, 'test.effect', { target: 'w' });
      expect(body(again)).toMatchObject({ operation_id: id, replayed: true });
      expect(again._meta?.[META_REPLAYED]).toBe(true);
      const other = await callWithId(client, 'test.effect', { target: 'w2' });
      expect(body(other).operation_id).not.toBe(id);
      expect(tool.effects.filter((e) => e.operationId === id)).toHaveLength(1);
      // An ID the client sets still wins.
      const own = await callWithId(client, 'test.effect', { target: 'w' }, 'own-1');
      expect(body(own)).toMatchObject({ operation_id: 'own-1', replayed: false });
    } finally {
      await client.close();
    }
  });

  it('a new session (a restarted bridge) is a new window: the same call runs again', async () => {
    const first = await bridge('--operation-ids', 'session');
    let id: string;
    try {
      id = String(body(await callWithId(first, 'test.effect', { target: 'restart' })).operation_id);
    } finally {
      await first.close();
    }
    const second = await bridge('--operation-ids', 'session');
    try {
      const again = await callWithId(second, 'test.effect', { target: 'restart' });
      expect(body(again).operation_id).not.toBe(id);
      expect(body(again)).toMatchObject({ replayed: false, state: 'succeeded' });
    } finally {
      await second.close();
    }
  });

  it.each([
    [
      ['--operation-ids', 'per-call', '--session-window', '60'],
      '--session-window only applies with --operation-ids session',
    ],
    [
      ['--operation-ids', 'session', '--session-window', '0'],
      '--session-window must be an integer of at least 1',
    ],
    [['--operation-ids', 'session', '--session-window', '86401'], '--session-window must be at most 86400'],
  ])('refuses %j as a usage error (exit 2)', async (argv, message) => {
    const err: string[] = [];
    const code = await main(['mcp', ...argv], {
      stdout: () => undefined,
      stderr: (text) => err.push(text),
      env: {},
    });
    expect(code).toBe(2);
    expect(err.join('')).toContain(message);
  });

  it('an unknown --operation-ids value is a usage error and nothing starts', async () => {
    const err: string[] = [];
    const code = await main(['mcp', '--operation-ids', 'model'], {
      stdout: () => undefined,
      stderr: (text) => err.push(text),
      env: {},
    });
    expect(code).toBe(2);
    expect(err.join('')).toContain('--operation-ids');
  });
});

describe('the stdio bridge on AWS (--sigv4): every request signed for execute-api in the region', () => {
  let gateway: SigV4Gateway;
  beforeAll(async () => {
    gateway = await startSigV4Gateway(
      { ...CREDENTIALS, region: 'eu-west-1', service: 'execute-api' },
      endpoint,
      'agent-a',
    );
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it("signs with the environment's credentials; @smithy/signature-v4 verifies each request, body included", async () => {
    const before = gateway.seen.length;
    const client = await launch(
      ['--endpoint', gateway.endpoint, '--sigv4', '--region', 'eu-west-1'],
      awsEnvironment(),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['test.effect']);
      const first = await callWithId(client, 'test.effect', { target: 'signed' }, 'stdio-sigv4-1');
      expect(body(first)).toMatchObject({
        operation_id: 'stdio-sigv4-1',
        state: 'succeeded',
        replayed: false,
      });
      const again = await callWithId(client, 'test.effect', { target: 'signed' }, 'stdio-sigv4-1');
      expect(again._meta?.[META_REPLAYED]).toBe(true);
      expect(tool.effects.filter((e) => e.operationId === 'stdio-sigv4-1')).toHaveLength(1);
    } finally {
      await client.close();
    }
    const posts = gateway.seen.slice(before).filter((r) => r.method === 'POST');
    // initialize, initialized, tools/list, two tools/call at least
    expect(posts.length).toBeGreaterThanOrEqual(5);
    for (const request of posts) {
      expect(request.path).toBe('/prod/mcp');
      expect(request.refused).toBeUndefined();
      expect(request.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDBRIDGETEST000001\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
      );
      expect(request.authorization).toContain('x-amz-date');
      expect(request.securityToken).toBe(CREDENTIALS.sessionToken);
    }
  });

  it('a signature made with another secret is refused by the verifier, and the bridge does not start', async () => {
    const before = gateway.seen.length;
    await expect(
      launch(
        ['--endpoint', gateway.endpoint, '--sigv4', '--region', 'eu-west-1'],
        awsEnvironment('some-other-secret'),
      ),
    ).rejects.toThrow();
    const seen = gateway.seen.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => r.refused === 'the signature does not verify')).toBe(true);
  });
});
