import { link, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyTool, UncertainOutcomeError } from '../../functions/domain/tool';
import { builtinTools } from '../../functions/tools/builtin';
import type { ToolFactory } from '../../functions/tools/registry';
import { webhookPost } from '../../functions/tools/webhook-post';
import { workspaceWriteFile } from '../../functions/tools/workspace-write-file';
import { buildRuntime } from '../../functions/wiring';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation, send, waitForOperation } from '../e2e/api-client';
import { captureOutput } from '../http/support';
import { type DynaliteHandle, startDynalite } from '../support/dynalite';
import { startServer, type TestServer, toolContext } from '../tools/tool-context';
import { startWorld, type World } from './world';

/**
 * The red team's findings, kept as tests: each attack that once got through (an agent speaking to
 * the ledger's own store, a tenant writing another's files, an append through a hard link, a key
 * reused after expiry inheriting the old operation's downstream identity) is tried again here against
 * the real stack: local mode as a child process over HTTP, or the deployed handlers in one process
 * on dynalite when the clock has to move past a record's retention.
 */

const TOKENS = [
  'a-agent=tenant-a:agent+operator',
  'a-approver=tenant-a:approver',
  'b-agent=tenant-b:agent+operator',
  'b-approver=tenant-b:approver',
].join(',');

/** A port free right now (the stack binds it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** An IPv4 address of this machine that is not loopback, if it has one. */
function lanAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) if (entry.family === 'IPv4' && !entry.internal) return entry.address;
  }
  return undefined;
}

let seq = 0;
function key(label: string): string {
  seq += 1;
  return `red-${label}-${seq}`;
}

describe('local mode, attacked over HTTP', () => {
  let stack: LocalStackProcess;
  let dataDir: string;
  let target: WebhookTarget;
  const ports = { api: 0, dynamo: 0, sqs: 0 };
  const lan = lanAddress();
  const workspace = () => path.join(dataDir, 'workspace');

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-red-team-'));
    target = await startWebhookTarget();
    ports.api = await freePort();
    ports.dynamo = await freePort();
    ports.sqs = await freePort();
    // The list names the stack's own ports outright: the refusal must not depend on the list.
    const allow = [
      'http://127.0.0.1',
      'http://localhost',
      ...Object.values(ports).map((port) => `http://127.0.0.1:${port}`),
      ...(lan === undefined ? [] : Object.values(ports).map((port) => `http://${lan}:${port}`)),
    ];
    stack = await startLocalStack({
      dataDir,
      env: {
        PORT: String(ports.api),
        TOOL_LEDGER_DYNAMODB_PORT: String(ports.dynamo),
        TOOL_LEDGER_SQS_PORT: String(ports.sqs),
        TOOL_LEDGER_TOKENS: TOKENS,
        TOOL_LEDGER_WEBHOOK_ALLOW: allow.join(','),
        TOOL_LEDGER_RECONCILE_EVERY_MS: '200',
      },
    });
  });

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    await target?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function call(token: string, id: string, tool: string, args: unknown) {
    return postOperation(stack.api, { token, key: id, body: { tool, arguments: args } });
  }

  describe("the stack's own endpoints are unreachable from tools, whatever the allow list says", () => {
    it('a tenant-b agent cannot Scan, delete or rewrite records through the local DynamoDB, SQS or API', async () => {
      const victim = key('victim');
      const written = await call('a-agent', victim, 'workspace.write_file', { path: 'v.txt', content: 'a' });
      expect(written.json).toMatchObject({ state: 'succeeded' });
      const dynamo = `127.0.0.1:${ports.dynamo}`;
      const attacks: { url: string; target: string; json: unknown }[] = [
        { url: `http://${dynamo}/`, target: 'DynamoDB_20120810.Scan', json: { TableName: stack.table } },
        {
          url: `http://localhost:${ports.dynamo}/`,
          target: 'DynamoDB_20120810.DeleteItem',
          json: { TableName: stack.table, Key: { pk: { S: 'x' }, sk: { S: 'op' } } },
        },
        {
          url: `http://127.0.0.1:${ports.dynamo}/x`,
          target: 'DynamoDB_20120810.UpdateItem',
          json: { TableName: stack.table },
        },
        { url: `http://127.0.0.1:${ports.sqs}/`, target: 'AmazonSQS.ListQueues', json: {} },
        { url: `http://localhost:${ports.sqs}/`, target: 'AmazonSQS.PurgeQueue', json: {} },
        { url: `http://127.0.0.1:${ports.api}/v1/operations`, target: 'x', json: {} },
        ...(lan === undefined
          ? []
          : [{ url: `http://${lan}:${ports.sqs}/`, target: 'AmazonSQS.ListQueues', json: {} }]),
      ];
      for (const attack of attacks) {
        const id = key('attack');
        const res = await call('b-agent', id, 'webhook.post', {
          url: attack.url,
          json: attack.json,
          headers: { 'x-amz-target': attack.target },
        });
        expect(res.status, attack.url).toBe(400);
        expect(res.json).toMatchObject({ code: 'validation_failed' });
        expect(res.text).not.toContain('Items');
        expect((await getOperation(stack.api, id, 'b-agent')).status).toBe(404);
      }
      // The same list still reaches an ordinary loopback service: the refusal is the reservation's.
      const ok = await call('b-agent', key('ok'), 'webhook.post', { url: `${target.origin}/ok`, json: {} });
      expect(ok.json).toMatchObject({ state: 'succeeded' });
      expect((await getOperation(stack.api, victim, 'a-agent')).json).toMatchObject({ state: 'succeeded' });
    });
  });

  describe('each tenant has its own workspace', () => {
    it('tenant-b can neither overwrite nor delete tenant-a’s files', async () => {
      const a = await call('a-agent', key('a'), 'workspace.write_file', { path: 'plan/p.md', content: 'A' });
      const b = await call('b-agent', key('b'), 'workspace.write_file', { path: 'plan/p.md', content: 'B' });
      expect(a.json).toMatchObject({ state: 'succeeded' });
      expect(b.json).toMatchObject({ state: 'succeeded' });
      expect(await readFile(path.join(workspace(), 'tenant-a', 'plan/p.md'), 'utf8')).toBe('A');
      expect(await readFile(path.join(workspace(), 'tenant-b', 'plan/p.md'), 'utf8')).toBe('B');

      await call('a-agent', key('a'), 'workspace.write_file', { path: 'only-a.txt', content: 'mine' });
      const del = key('del');
      const pending = await call('b-agent', del, 'workspace.delete_file', { path: 'only-a.txt' });
      expect(pending.json).toMatchObject({ state: 'awaiting_approval' });
      const approval = await send(stack.api, `/v1/operations/${del}/approval`, {
        method: 'POST',
        headers: { authorization: 'Bearer b-approver', 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve', arguments_digest: pending.json?.arguments_digest }),
      });
      expect(approval.status).toBe(200);
      const done = await waitForOperation(stack.api, del, (op) => op.state === 'succeeded', {
        token: 'b-agent',
      });
      expect(done.result).toEqual({ path: 'only-a.txt', deleted: false });
      expect(await readFile(path.join(workspace(), 'tenant-a', 'only-a.txt'), 'utf8')).toBe('mine');
    });
  });

  describe('links', () => {
    it('append_line never writes through a hard link, and write_file refuses one', async () => {
      const outside = path.join(dataDir, 'outside');
      await mkdir(outside, { recursive: true });
      const secret = path.join(outside, 'secret.log');
      await writeFile(secret, 'secret\n');
      await mkdir(path.join(workspace(), 'tenant-a', 'logs'), { recursive: true });
      await link(secret, path.join(workspace(), 'tenant-a', 'logs', 'app.log'));
      for (const [tool, args] of [
        ['workspace.append_line', { path: 'logs/app.log', line: 'pwned' }],
        ['workspace.write_file', { path: 'logs/app.log', content: 'pwned' }],
      ] as const) {
        const res = await call('a-agent', key('hard'), tool, args);
        expect(res.json, tool).toMatchObject({ state: 'failed_terminal', error: { code: 'path_escape' } });
      }
      expect(await readFile(secret, 'utf8')).toBe('secret\n');
    });

    it('symbolic links as the file, as a folder on the way, and as a tenant’s own folder are refused', async () => {
      const outside = path.join(dataDir, 'outside-sym');
      await mkdir(outside, { recursive: true });
      await writeFile(path.join(outside, 'target.txt'), 'untouched');
      const home = path.join(workspace(), 'tenant-a');
      await mkdir(home, { recursive: true });
      await symlink(path.join(outside, 'target.txt'), path.join(home, 'file-link.txt'));
      await symlink(outside, path.join(home, 'dir-link'));
      for (const p of ['file-link.txt', 'dir-link/target.txt', 'dir-link/new.txt']) {
        const res = await call('a-agent', key('sym'), 'workspace.append_line', { path: p, line: 'pwned' });
        expect(res.json, p).toMatchObject({ state: 'failed_terminal', error: { code: 'path_escape' } });
      }
      expect(await readFile(path.join(outside, 'target.txt'), 'utf8')).toBe('untouched');
    });
  });
});

describe('tool-level checks of the same attacks (no route around the schema)', () => {
  let reserved: TestServer;
  let dirs: string;
  beforeAll(async () => {
    reserved = await startServer((_req, res) => res.end('{}'));
    dirs = await mkdtemp(path.join(tmpdir(), 'tool-ledger-red-tools-'));
  });
  afterAll(async () => {
    await reserved?.close();
    await rm(dirs, { recursive: true, force: true });
  });

  it('a stored call that names a reserved endpoint is refused at execute, for every spelling of loopback, and nothing arrives', async () => {
    const tool = webhookPost({
      webhookAllow: ['127.0.0.1', 'localhost', '0.0.0.0', '[::ffff:127.0.0.1]'].map(
        (host) => `http://${host}:${reserved.port}`,
      ),
      local: true,
      reservedEndpoints: [`http://127.0.0.1:${reserved.port}`],
    });
    for (const host of ['127.0.0.1', 'localhost', '0.0.0.0', '[::ffff:127.0.0.1]']) {
      const url = `http://${host}:${reserved.port}/`;
      expect(tool.schema.safeParse({ url, json: {} }).success, url).toBe(false);
      // As if validated before the reservation existed (a record from an older deployment).
      await expect(tool.execute({ url, json: {} }, toolContext()), url).rejects.toMatchObject({
        code: 'endpoint_reserved',
      });
    }
    expect(reserved.requests).toHaveLength(0);
  });

  it('on AWS the Lambda runtime API is refused even when an origin names it, and metadata only when named', async () => {
    const runtime = buildRuntime(builtinTools, {
      AWS_LAMBDA_RUNTIME_API: `127.0.0.1:${reserved.port}`,
      TOOL_LEDGER_WEBHOOK_ALLOW: `http://127.0.0.1:${reserved.port},https://hooks.example.com`,
      TOOL_LEDGER_TABLE_NAME: 'unused',
      AWS_REGION: 'us-east-1',
    });
    const tool = runtime.deps.tools.get('webhook.post');
    const url = `http://127.0.0.1:${reserved.port}/2018-06-01/runtime/invocation/next`;
    expect(tool.schema.safeParse({ url, json: {} }).success).toBe(false);
    await expect(tool.execute({ url, json: {} }, toolContext())).rejects.toMatchObject({
      code: 'endpoint_reserved',
    });
    expect(reserved.requests).toHaveLength(0);
    // A listed name that resolves to the instance metadata address is refused.
    const rebinding = webhookPost(
      { webhookAllow: ['https://hooks.example.com'], local: false },
      { resolve: async () => [{ address: '169.254.169.254', family: 4 }] },
    );
    await expect(
      rebinding.execute({ url: 'https://hooks.example.com/x', json: {} }, toolContext()),
    ).rejects.toMatchObject({ code: 'address_not_allowed' });
  });

  it('tenant-b’s reconcile of a write cannot be swayed by tenant-a’s file, and a tenant folder that is a link is refused', async () => {
    const root = path.join(dirs, 'ws');
    const tool = workspaceWriteFile({ workspaceRoot: root });
    const args = tool.schema.parse({ path: 'shared.txt', content: 'same content' });
    await tool.execute(args, toolContext({ tenant: 'tenant-a' }));
    expect(await tool.reconcile?.(args, toolContext({ tenant: 'tenant-a' }))).toMatchObject({
      status: 'applied',
    });
    expect(await tool.reconcile?.(args, toolContext({ tenant: 'tenant-b' }))).toEqual({
      status: 'not_applied',
    });

    await symlink(path.join(root, 'tenant-a'), path.join(root, 'tenant-c'));
    await expect(
      tool.execute(
        tool.schema.parse({ path: 'shared.txt', content: 'x' }),
        toolContext({ tenant: 'tenant-c' }),
      ),
    ).rejects.toMatchObject({ code: 'path_escape' });
    expect(await readFile(path.join(root, 'tenant-a', 'shared.txt'), 'utf8')).toBe('same content');
  });

  it('tenant names that look like paths get folders of their own', async () => {
    const root = path.join(dirs, 'names');
    const tool = workspaceWriteFile({ workspaceRoot: root });
    const args = tool.schema.parse({ path: 'f.txt', content: 'x' });
    for (const tenant of ['..', '.', 'a/../b', '/etc', 'Acme', 'acme', '.tool-ledger']) {
      await tool.execute(args, toolContext({ tenant }));
    }
    const folders = await readdir(root);
    expect(folders).toHaveLength(7);
    // A plain tenant is its own folder; one that could escape or hide gets a hashed, dotted name.
    expect(folders.filter((f) => !/^\.tenant-[0-9a-f]{64}$/.test(f)).sort()).toEqual(['Acme', 'acme']);
    await expect(readFile(path.join(dirs, 'f.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(readFile('/etc/f.txt')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('a key reused after its record expired is a new operation downstream', () => {
  let db: DynaliteHandle;
  let world: World;
  let ws: string;
  let dedupe: WebhookTarget;
  /** Operation IDs whose next append attempt dies between its reservation and the append. */
  const crashing = new Set<string>();

  const crashingTools: ToolFactory = (env) =>
    builtinTools(env).map((tool): AnyTool => {
      if (tool.name !== 'workspace.append_line') return tool;
      return {
        ...tool,
        async execute(args, ctx) {
          if (crashing.delete(ctx.operationId)) {
            throw new UncertainOutcomeError('worker_died', 'the worker died before it appended');
          }
          return tool.execute(args, ctx);
        },
      };
    });

  beforeAll(async () => {
    db = await startDynalite();
    ws = await mkdtemp(path.join(tmpdir(), 'tool-ledger-red-reuse-'));
    dedupe = await startWebhookTarget({ dedupeByKey: true });
    world = await startWorld(db, crashingTools, {
      TOOL_LEDGER_WORKSPACE_DIR: ws,
      TOOL_LEDGER_WEBHOOK_ALLOW: dedupe.origin,
      TOOL_LEDGER_MAX_RECONCILE_CHECKS: '1',
    });
  });

  afterAll(async () => {
    await dedupe?.close();
    await db?.stop();
    await rm(ws, { recursive: true, force: true });
  });

  const RETENTION_PLUS_A_DAY_MS = (2_592_000 + 86_400) * 1000;

  it('append_line: 60 reused keys whose new attempt crashed before appending end 0 succeeded, and no line is appended twice', async () => {
    const N = 60;
    const append = (i: number) => ({
      method: 'POST',
      path: '/v1/operations',
      key: `reuse-${i}`,
      body: { tool: 'workspace.append_line', arguments: { path: 'journal.txt', line: `entry-${i}` } },
    });
    await captureOutput(async () => {
      for (let i = 0; i < N; i += 1) expect((await world.call(append(i))).body.state).toBe('succeeded');
      world.advance(RETENTION_PLUS_A_DAY_MS);
      for (let i = 0; i < N; i += 1) {
        crashing.add(`reuse-${i}`);
        const again = await world.call(append(i));
        expect(again.body).toMatchObject({ state: 'uncertain', replayed: false });
      }
      world.advance(60_000);
      await world.reconcile();
    });
    const states = [];
    for (let i = 0; i < N; i += 1)
      states.push((await world.call({ path: `/v1/operations/reuse-${i}` })).body);
    expect(states.filter((s) => s.state === 'succeeded')).toHaveLength(0);
    expect(states.every((s) => s.state === 'needs_reconciliation')).toBe(true);
    const lines = (await readFile(path.join(ws, 'acme', 'journal.txt'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(N);
  });

  it('webhook.post: a target that dedupes longer than the retention still receives the new operation', async () => {
    const post = {
      method: 'POST',
      path: '/v1/operations',
      key: 'reuse-hook',
      body: { tool: 'webhook.post', arguments: { url: `${dedupe.origin}/deploy`, json: { v: 1 } } },
    };
    await captureOutput(async () => {
      expect((await world.call(post)).body.state).toBe('succeeded');
      world.advance(RETENTION_PLUS_A_DAY_MS);
      const second = await world.call(post);
      expect(second.body).toMatchObject({ state: 'succeeded', replayed: false });
    });
    expect(dedupe.distinctKeys('/deploy')).toBe(2);
    expect(dedupe.effects('/deploy')).toBe(2);
  });
});
