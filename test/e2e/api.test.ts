import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupAlive, type LocalStackProcess, READY_LINE, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation, rawRequest, send } from './api-client';

/**
 * The HTTP front door of local mode, end to end (issue 3): a child process started once for the file,
 * reached only over HTTP, with the test's own counting webhook target.
 */

const AGENT = 'agent-token';
const TOKENS = `${AGENT}=local:agent+operator,approver-token=local:approver,other-token=other:agent+operator`;

let stack: LocalStackProcess;
let target: WebhookTarget;
let dataDir: string;
let seq = 0;

/** A fresh operation ID per test, so tests never see each other's records. */
function key(label: string): string {
  seq += 1;
  return `api-${label}-${seq}-${Date.now()}`;
}

function webhook(path: string, json: unknown = { n: 1 }) {
  return { tool: 'webhook.post', arguments: { url: `${target.origin}${path}`, json } };
}

function writeFile(name: string, content = 'hello') {
  return { tool: 'workspace.write_file', arguments: { path: name, content } };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-api-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({
    dataDir,
    env: { TOOL_LEDGER_TOKENS: TOKENS, TOOL_LEDGER_RECONCILE_EVERY_MS: '500' },
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

describe('local mode over HTTP', () => {
  it('prints the ready line exactly as specified, alone on its line', () => {
    expect(stack.readyLine).toMatch(READY_LINE);
    expect(stack.readyLine).toBe(
      `tool-ledger ready api=${stack.api} sqs=${stack.sqs} queue=${stack.queueUrl} dynamodb=${stack.dynamodb} table=${stack.table}`,
    );
    expect(stack.stdoutLines().filter((l) => l.startsWith('tool-ledger ready'))).toEqual([stack.readyLine]);
    expect(stack.table).toBe('tool-ledger');
    expect(stack.queueUrl).toMatch(/\/tool-ledger-work$/);
  });

  it('runs a first call once (201) and replays it with Idempotent-Replayed and the same body', async () => {
    const id = key('replay');
    const first = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(`/ok/${id}`) });
    expect(first.status).toBe(201);
    expect(first.headers.get('location')).toBe(`/v1/operations/${id}`);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.json).toMatchObject({ operation_id: id, state: 'succeeded', attempt: 1, replayed: false });

    const again = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(`/ok/${id}`) });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json).toEqual({ ...first.json, replayed: true });
    expect(target.count(`/ok/${id}`)).toBe(1);
  });

  it('rejects the same key with a different body (422) and runs nothing', async () => {
    const id = key('conflict');
    expect(
      (await postOperation(stack.api, { token: AGENT, key: id, body: writeFile(`${id}.txt`, 'one') })).status,
    ).toBe(201);
    const other = await postOperation(stack.api, {
      token: AGENT,
      key: id,
      body: writeFile(`${id}.txt`, 'two'),
    });
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toContain('application/problem+json');
    expect(other.json?.code).toBe('idempotency_key_reused');
  });

  it('while a slow webhook is in flight: a duplicate gets 409 with Retry-After, a different body 422', async () => {
    const id = key('inflight');
    const path = `/hold/${id}`;
    const original = postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) });
    await target.waitForHit(path);

    const duplicate = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json?.code).toBe('operation_in_progress');
    expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const different = await postOperation(stack.api, {
      token: AGENT,
      key: id,
      body: webhook(path, { n: 2 }),
    });
    expect(different.status).toBe(422);
    expect(different.json?.code).toBe('idempotency_key_reused');

    target.release(id);
    const done = await original;
    expect(done.status).toBe(201);
    expect(done.json).toMatchObject({ state: 'succeeded', replayed: false });
    expect(target.count(path)).toBe(1);
  });

  it('10 parallel identical requests cause exactly one webhook call and no 5xx', async () => {
    const id = key('parallel');
    const path = `/delay/300/${id}`;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    expect(target.count(path)).toBe(1);
    const ran = responses.filter((r) => r.status === 201 && r.json?.replayed === false);
    expect(ran).toHaveLength(1);
  });

  it("stores the target's 404 and replays it without calling again", async () => {
    const id = key('404');
    const path = `/status/404/${id}`;
    const first = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) });
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({ state: 'failed_terminal', replayed: false });
    expect(first.json?.error).toMatchObject({ status: 404 });
    const replay = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual({ ...first.json, replayed: true });
    expect(target.count(path)).toBe(1);
  });

  it('keeps tenants apart: the same key in two tenants is two operations, invisible to each other', async () => {
    const id = key('tenant');
    const path = `/ok/${id}`;
    const local = await postOperation(stack.api, { token: AGENT, key: id, body: webhook(path) });
    const other = await postOperation(stack.api, { key: id, body: webhook(path), token: 'other-token' });
    expect(local.status).toBe(201);
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(target.count(path)).toBe(2);
    const keys = target.hits.filter((h) => h.path === path).map((h) => h.idempotencyKey);
    expect(new Set(keys).size).toBe(2);

    const onlyLocal = key('tenant-only');
    expect(
      (await postOperation(stack.api, { token: AGENT, key: onlyLocal, body: writeFile(`${onlyLocal}.txt`) }))
        .status,
    ).toBe(201);
    expect((await getOperation(stack.api, onlyLocal, 'other-token')).status).toBe(404);
    expect((await getOperation(stack.api, onlyLocal, AGENT)).status).toBe(200);
  });

  it('requires a well-formed key: none, empty, 256 characters or two keys → 400; 255 characters works', async () => {
    const body = writeFile('keys.txt');
    const missing = await postOperation(stack.api, { token: AGENT, body });
    expect(missing.status).toBe(400);
    expect(missing.json?.code).toBe('idempotency_key_missing');
    const empty = await postOperation(stack.api, { token: AGENT, key: '', body });
    expect(empty.status).toBe(400);
    expect(['idempotency_key_missing', 'idempotency_key_invalid']).toContain(empty.json?.code);
    const tooLong = await postOperation(stack.api, { token: AGENT, key: 'k'.repeat(256), body });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json?.code).toBe('idempotency_key_invalid');

    const twoKeys = await rawRequest(
      stack.api,
      '/v1/operations',
      'POST',
      {
        Authorization: `Bearer ${AGENT}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': [`${key('two')}-a`, `${key('two')}-b`],
      },
      Buffer.from(JSON.stringify(body)),
    );
    expect(twoKeys.status).toBe(400);
    expect(twoKeys.contentType).toContain('application/problem+json');

    const longest = `${key('max')}-`.padEnd(255, 'x');
    expect(longest).toHaveLength(255);
    const ok = await postOperation(stack.api, { token: AGENT, key: longest, body });
    expect(ok.status).toBe(201);
    expect(ok.json?.operation_id).toBe(longest);
  });

  it('an invalid body does not consume the key: the valid call after it executes', async () => {
    const id = key('invalid-first');
    const bad = await postOperation(stack.api, {
      token: AGENT,
      key: id,
      body: { tool: 'workspace.write_file', arguments: { path: `${id}.txt` } },
    });
    expect(bad.status).toBe(400);
    expect(bad.json?.code).toBe('validation_failed');
    expect((await getOperation(stack.api, id, AGENT)).status).toBe(404);
    const good = await postOperation(stack.api, { token: AGENT, key: id, body: writeFile(`${id}.txt`) });
    expect(good.status).toBe(201);
    expect(good.json).toMatchObject({ state: 'succeeded', replayed: false, attempt: 1 });
  });

  describe('hostile input gets a 4xx problem+json, creates no record and leaves the server alive', () => {
    const deep = `{"tool":"webhook.post","arguments":{"url":"http://127.0.0.1/x","json":${'['.repeat(2000)}${']'.repeat(2000)}}}`;
    const cases: { name: string; contentType?: string; body: () => Buffer; status: number }[] = [
      { name: 'malformed JSON', body: () => Buffer.from('{"tool": "workspace.write_file", '), status: 400 },
      {
        name: 'a text/plain body',
        contentType: 'text/plain',
        body: () => json(writeFile('x.txt')),
        status: 415,
      },
      {
        name: 'a form body',
        contentType: 'application/x-www-form-urlencoded',
        body: () => Buffer.from('tool=workspace.write_file'),
        status: 415,
      },
      { name: 'no content type', contentType: '', body: () => json(writeFile('x.txt')), status: 415 },
      {
        name: 'an array instead of an object',
        body: () => Buffer.from('[{"tool":"workspace.write_file"}]'),
        status: 400,
      },
      { name: 'deep nesting', body: () => Buffer.from(deep), status: 400 },
      {
        name: 'a __proto__ key',
        body: () =>
          Buffer.from(
            '{"tool":"workspace.write_file","arguments":{"path":"p.txt","content":"c","__proto__":{"admin":true}}}',
          ),
        status: 400,
      },
      {
        name: 'a top-level __proto__ key',
        body: () => Buffer.from('{"__proto__":{"tool":"x"},"tool":"workspace.write_file","arguments":{}}'),
        status: 400,
      },
      {
        name: 'non-UTF-8 bytes',
        body: () =>
          Buffer.concat([
            Buffer.from('{"tool":"workspace.write_file","arguments":{"path":"u.txt","content":"'),
            Buffer.from([0xff, 0xfe, 0xc3]),
            Buffer.from('"}}'),
          ]),
        status: 400,
      },
      {
        name: 'a body over 256 KiB',
        body: () => json(writeFile('big.txt', 'x'.repeat(300 * 1024))),
        status: 413,
      },
      {
        name: 'a body over the gateway quota',
        body: () => Buffer.alloc(11 * 1024 * 1024, 0x20),
        status: 413,
      },
    ];

    for (const c of cases) {
      it(`${c.name} → ${c.status}`, async () => {
        const id = key('hostile');
        const headers: Record<string, string> = { Authorization: `Bearer ${AGENT}`, 'Idempotency-Key': id };
        if (c.contentType !== '') headers['Content-Type'] = c.contentType ?? 'application/json';
        const response = await rawRequest(stack.api, '/v1/operations', 'POST', headers, c.body());
        expect(response.status).toBe(c.status);
        expect(response.contentType).toContain('application/problem+json');
        expect(JSON.parse(response.text)).toMatchObject({ status: c.status, code: expect.any(String) });
        expect((await getOperation(stack.api, id, AGENT)).status).toBe(404);
        const alive = await send(stack.api, '/v1/tools', { headers: { authorization: `Bearer ${AGENT}` } });
        expect(alive.status).toBe(200);
      });
    }
  });
});

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}
