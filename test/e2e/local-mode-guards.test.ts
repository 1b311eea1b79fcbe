import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation } from './api-client';

/**
 * What local mode does when it cannot keep its promises: a data folder already in use refuses the
 * start (exit 2, naming the holder's pid), a data folder that disappears while running fails closed
 * (503 `ledger_unavailable`, nothing runs, nothing runs twice after a restart), and a setting that
 * cannot be used stops the start (exit 2, naming the entry) instead of a 500 at the first request.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX_CLI = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

let target: WebhookTarget;
const folders: string[] = [];
const stacks: LocalStackProcess[] = [];

beforeAll(async () => {
  target = await startWebhookTarget();
});

afterAll(async () => {
  for (const stack of stacks) await stack.kill();
  await target?.close();
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

async function tempFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-guards-'));
  folders.push(folder);
  return folder;
}

async function start(dataDir: string): Promise<LocalStackProcess> {
  const stack = await startLocalStack({ dataDir });
  stacks.push(stack);
  return stack;
}

/** Runs `npm start`'s entry to its exit (it is expected to refuse to start). */
function runToExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, 'functions/local/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      // A start that should have been refused: stop it, and let the assertion on the code fail.
      if (stdout.includes('tool-ledger ready')) child.kill('SIGKILL');
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

/** The process group of a pid (Linux `/proc/<pid>/stat`, field 5). */
function processGroup(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

describe('one process per data folder', () => {
  it('refuses a second start on a folder in use with exit 2 and names the process that holds it', async () => {
    const dataDir = await tempFolder();
    const first = await start(dataDir);
    const second = await runToExit({ TOOL_LEDGER_DATA_DIR: dataDir });
    expect(second.code, second.stderr).toBe(2);
    const pid = Number(/in use by process (\d+)/.exec(second.stderr)?.[1]);
    expect(Number.isSafeInteger(pid), second.stderr).toBe(true);
    expect(processGroup(pid)).toBe(first.pgid);
    // The first one was not disturbed.
    const tools = await fetch(`${first.api}/v1/tools`, {
      headers: { authorization: `Bearer ${first.tokens.agent}` },
    });
    expect(tools.status).toBe(200);
    await first.kill();
  }, 120_000);

  it('takes over the lock of a holder that was killed', async () => {
    const dataDir = await tempFolder();
    const first = await start(dataDir);
    const id = `kept-${Date.now()}`;
    const body = { tool: 'workspace.write_file', arguments: { path: `${id}.txt`, content: 'x' } };
    expect((await postOperation(first.api, { token: first.tokens.agent, key: id, body })).status).toBe(201);
    await first.kill();
    const second = await start(dataDir);
    const replay = await postOperation(second.api, { token: second.tokens.agent, key: id, body });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    await second.kill();
  }, 120_000);

  it('starts over a lock file whose pid no longer runs', async () => {
    const dataDir = await tempFolder();
    // A pid above Linux's highest possible pid (2^22) names no process.
    await writeFile(join(dataDir, 'tool-ledger.lock'), '4194305\n');
    const stack = await start(dataDir);
    expect(stack.api).toMatch(/^http:/);
    await stack.kill();
  }, 120_000);
});

describe('fail closed when the data folder goes away', () => {
  it('answers 503 ledger_unavailable, runs nothing, and after a restart runs the call once', async () => {
    const dataDir = await tempFolder();
    const stack = await start(dataDir);
    const before = `before-${Date.now()}`;
    const created = await postOperation(stack.api, {
      token: stack.tokens.agent,
      key: before,
      body: { tool: 'webhook.post', arguments: { url: `${target.origin}/ok/${before}`, json: {} } },
    });
    expect(created.status).toBe(201);

    await rm(dataDir, { recursive: true, force: true });
    const after = `after-${Date.now()}`;
    const body = { tool: 'webhook.post', arguments: { url: `${target.origin}/ok/${after}`, json: {} } };
    const refused = await postOperation(stack.api, { token: stack.tokens.agent, key: after, body });
    expect(refused.status).toBe(503);
    expect(refused.json?.code).toBe('ledger_unavailable');
    const read = await getOperation(stack.api, before, stack.tokens.agent);
    expect(read.status).toBe(503);
    // A folder created in the deleted one's place is not served either: only a fresh start opens it.
    await mkdir(dataDir, { recursive: true });
    expect((await postOperation(stack.api, { token: stack.tokens.agent, key: after, body })).status).toBe(
      503,
    );
    expect(target.count(`/ok/${after}`)).toBe(0);

    await stack.kill();
    const restarted = await start(dataDir);
    const ran = await postOperation(restarted.api, { token: restarted.tokens.agent, key: after, body });
    expect(ran.status).toBe(201);
    const again = await postOperation(restarted.api, { token: restarted.tokens.agent, key: after, body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(target.count(`/ok/${after}`)).toBe(1);
    await restarted.kill();
  }, 120_000);
});

describe('fail closed while the data folder is not writable', () => {
  it('answers 503 ledger_unavailable while it is read-only, and serves again once it is writable', async () => {
    const dataDir = await tempFolder();
    const stack = await start(dataDir);
    const id = `read-only-${Date.now()}`;
    const body = { tool: 'webhook.post', arguments: { url: `${target.origin}/ok/${id}`, json: {} } };
    await chmod(dataDir, 0o555);
    try {
      const refused = await postOperation(stack.api, { token: stack.tokens.agent, key: id, body });
      expect(refused.status).toBe(503);
      expect(refused.json?.code).toBe('ledger_unavailable');
      expect(target.count(`/ok/${id}`)).toBe(0);
    } finally {
      await chmod(dataDir, 0o755);
    }
    const ran = await postOperation(stack.api, { token: stack.tokens.agent, key: id, body });
    expect(ran.status).toBe(201);
    expect(target.count(`/ok/${id}`)).toBe(1);
    await stack.kill();
  }, 120_000);
});

describe("the stack's own endpoints are reserved beside the user's", () => {
  it("keeps the user's TOOL_LEDGER_RESERVED_ENDPOINTS and adds the API: webhook.post reaches neither", async () => {
    const sidecar = await startWebhookTarget();
    try {
      const stack = await startLocalStack({
        dataDir: await tempFolder(),
        env: { TOOL_LEDGER_RESERVED_ENDPOINTS: sidecar.origin },
      });
      stacks.push(stack);
      const call = (id: string, url: string) =>
        postOperation(stack.api, {
          token: stack.tokens.agent,
          key: id,
          body: { tool: 'webhook.post', arguments: { url, json: {} } },
        });
      for (const [id, url] of [
        [`user-reserved-${Date.now()}`, `${sidecar.origin}/ok/x`],
        [`own-api-${Date.now()}`, `${stack.api}/v1/tools`],
      ] as const) {
        const refused = await call(id, url);
        // Refused at validation: a reserved URL never becomes an operation.
        expect(refused.status, url).toBe(400);
        expect(refused.json, url).toMatchObject({
          code: 'validation_failed',
          issues: [{ path: '$.arguments.url', message: expect.stringContaining('service endpoint') }],
        });
      }
      expect(sidecar.hits).toHaveLength(0);
      const allowed = await call(`allowed-${Date.now()}`, `${target.origin}/ok/allowed`);
      expect(allowed.json).toMatchObject({ state: 'succeeded' });
      await stack.kill();
    } finally {
      await sidecar.close();
    }
  }, 120_000);
});

describe('settings are validated at start', () => {
  it.each([
    [
      { TOOL_LEDGER_TOKENS: 't=acme:agnt' },
      'TOOL_LEDGER_TOKENS entry 1 (<token>=acme:agnt): unknown role "agnt"',
    ],
    [
      { TOOL_LEDGER_TOKENS: 'dev-token=local:agent,broken' },
      'TOOL_LEDGER_TOKENS entry 2 (<token>): must be token=tenant:role+role',
    ],
    [
      { TOOL_LEDGER_TOKENS: 'a=Acme:agent,b=acme:operator' },
      'TOOL_LEDGER_TOKENS entry 2 (<token>=acme:operator): tenant "acme" differs from tenant "Acme" only by case',
    ],
    [{ TOOL_LEDGER_LEASE_GRACE_MS: '5s' }, 'TOOL_LEDGER_LEASE_GRACE_MS=5s: must be a non-negative integer'],
    [{ TOOL_LEDGER_LOG_FORMAT: 'xml' }, 'TOOL_LEDGER_LOG_FORMAT=xml: must be json or pretty'],
    [
      { TOOL_LEDGER_CALLER_TOOLS: 'crm.*,pay.*:max_attempts=20' },
      'TOOL_LEDGER_CALLER_TOOLS entry 2 (pay.*:max_attempts=20): max_attempts must be 1 to 10',
    ],
    [
      { TOOL_LEDGER_WEBHOOK_ALLOW: 'http://127.0.0.1,ftp://files.example' },
      'TOOL_LEDGER_WEBHOOK_ALLOW entry 2 (ftp://files.example): an allowed origin must use http or https',
    ],
  ])(
    'refuses %o with exit 2 and names the entry',
    async (env, message) => {
      const dataDir = await tempFolder();
      const result = await runToExit({ TOOL_LEDGER_DATA_DIR: dataDir, ...env });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(message);
    },
    60_000,
  );
});
