import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../cli/main';
import { HttpAdapter } from '../../functions/local/http-adapter';
import { META_REPLAYED } from '../../functions/mcp/protocol';
import { type TestApi, testApi } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
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
  const client = new Client({ name: 'desktop-client', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['bin/tool-ledger.mjs', 'mcp', '--endpoint', endpoint, '--token', 'agent-a', ...extra],
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stderr: 'pipe',
    }),
  );
  return client;
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
