import { beforeEach, describe, expect, it } from 'vitest';
import { useDynalite } from '../support/dynalite';
import { injectFaults, throttling } from '../support/faults';
import { Gate, ScriptedTool } from '../support/harness';
import { captureOutput, type TestApi, type TestRequest, testApi } from './support';

const db = useDynalite();
let tool: ScriptedTool;
let approvalTool: ScriptedTool;
let longTool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  approvalTool = new ScriptedTool('test.approved', { requiresApproval: true });
  longTool = new ScriptedTool('test.long', { timeoutMs: 60_000 });
  api = await testApi(db.client, [tool.tool, approvalTool.tool, longTool.tool]);
});

function post(key: string | null, body: unknown = { tool: 'test.effect', arguments: { target: 'a' } }) {
  return { method: 'POST', path: '/v1/operations', key, body } satisfies TestRequest;
}

describe('POST /v1/operations: the SPEC §5 status table', () => {
  it('a terminal operation is 201 with Location; a replay is 201 with Idempotent-Replayed and the same body', async () => {
    const first = await api.call(post('op-1'));
    expect(first.status).toBe(201);
    expect(first.headers.Location).toBe('/v1/operations/op-1');
    expect(first.headers['Idempotent-Replayed']).toBeUndefined();
    expect(first.headers['Content-Type']).toBe('application/json');
    expect(first.headers['Cache-Control']).toBe('no-store');
    expect(first.body).toMatchObject({
      operation_id: 'op-1',
      tool: 'test.effect',
      state: 'succeeded',
      attempt: 1,
      replayed: false,
      result: { ok: true, target: 'a', attempt: 1 },
      error: null,
    });
    expect(first.body.arguments_digest).toMatch(/^v1:[0-9a-f]{64}$/);
    expect(typeof first.body.created_at).toBe('string');
    expect(typeof first.body.completed_at).toBe('string');
    expect(first.body.arguments).toBeUndefined();

    const again = await api.call(post('op-1'));
    expect(again.status).toBe(201);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
    expect(again.headers.Location).toBe('/v1/operations/op-1');
    expect(again.body).toEqual({ ...first.body, replayed: true });
    expect(tool.effects).toHaveLength(1);
  });

  it('a result of 150 KB of JSON is answered whole, and a replay answers the same result', async () => {
    const result = {
      log: Array.from({ length: 3_500 }, (_, i) => ({
        line: i,
        text: `step ${i % 17} passed in ${i % 7} ms`,
      })),
    };
    expect(JSON.stringify(result).length).toBeGreaterThan(128 * 1024);
    tool.next({ kind: 'succeed', result });
    const first = await api.call(post('op-big'));
    expect(first.status).toBe(201);
    expect(first.body.result).toEqual(result);
    const again = await api.call(post('op-big'));
    expect(again.headers['Idempotent-Replayed']).toBe('true');
    expect(JSON.stringify(again.body.result)).toBe(JSON.stringify(result));
    expect(tool.effects).toHaveLength(1);
  });

  it('a failed_terminal operation is also 201, with its error code and no argument values', async () => {
    tool.next({ kind: 'terminal', code: 'target_refused', status: 404 });
    const first = await api.call(post('op-t', { tool: 'test.effect', arguments: { target: 'canary-xyz' } }));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      state: 'failed_terminal',
      error: { code: 'target_refused', status: 404 },
    });
    expect(JSON.stringify(first.body)).not.toContain('canary-xyz');
    const again = await api.call(post('op-t', { tool: 'test.effect', arguments: { target: 'canary-xyz' } }));
    expect(again.status).toBe(201);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
    expect(tool.starts).toHaveLength(1);
  });

  it('an attempt that ends failed_retryable is 503 with Retry-After; the same key and body runs the next attempt', async () => {
    tool.next({ kind: 'not_applied', code: 'connect_refused' });
    const first = await api.call(post('op-r'));
    expect(first.status).toBe(503);
    expect(Number(first.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(first.headers['Content-Type']).toBe('application/json');
    expect(first.body).toMatchObject({ operation_id: 'op-r', state: 'failed_retryable', attempt: 1 });
    const second = await api.call(post('op-r'));
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ state: 'succeeded', attempt: 2, replayed: false });
    expect(tool.effects).toHaveLength(1);
  });

  it('a duplicate while a worker holds a live lease is 409 operation_in_progress with Retry-After and the state', async () => {
    // The first call runs until the gate opens, so the duplicate always meets its live lease (a
    // 300 ms sleep did not always outlast the duplicate's round trip on a busy machine).
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const first = api.call(post('op-p'));
    await tool.started(1);
    const duplicate = await api.call(post('op-p'));
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers['Content-Type']).toBe('application/problem+json');
    expect(Number(duplicate.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(duplicate.body).toMatchObject({
      type: 'urn:tool-ledger:problem:operation_in_progress',
      status: 409,
      code: 'operation_in_progress',
      state: 'pending',
      operation: { operation_id: 'op-p', state: 'pending', attempt: 1 },
    });
    gate.open();
    expect((await first).status).toBe(201);
    expect(tool.effects).toHaveLength(1);
  });

  it('pending with an expired lease is 202 with Location and Retry-After, and nothing runs again', async () => {
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const first = api.call(post('op-x'));
    await tool.started(1);
    api.ledger.advance(3_600_000);
    const late = await api.call(post('op-x'));
    expect(late.status).toBe(202);
    expect(late.headers.Location).toBe('/v1/operations/op-x');
    expect(Number(late.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(late.body).toMatchObject({ state: 'pending', replayed: false });
    expect(late.headers['Idempotent-Replayed']).toBeUndefined();
    gate.open();
    await first;
    expect(tool.starts).toHaveLength(1);
  });

  it('Prefer: respond-async reserves as queued, enqueues, and answers 202 without running the tool', async () => {
    const res = await api.call({ ...post('op-q'), headers: [['Prefer', 'wait=5, respond-async']] });
    expect(res.status).toBe(202);
    expect(res.headers.Location).toBe('/v1/operations/op-q');
    expect(res.headers['Retry-After']).toBeDefined();
    expect(res.headers['Preference-Applied']).toBe('respond-async');
    expect(res.body).toMatchObject({ state: 'queued', attempt: 0, replayed: false });
    expect(api.ledger.queue.messages).toHaveLength(1);
    expect(api.ledger.queue.messages[0]).toMatchObject({ operation_id: 'op-q', tenant: 'acme' });
    expect(tool.starts).toHaveLength(0);
  });

  it('a tool too long for the synchronous budget is queued (202) even without Prefer', async () => {
    const res = await api.call(post('op-long', { tool: 'test.long', arguments: { target: 'a' } }));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ state: 'queued' });
    expect(longTool.starts).toHaveLength(0);
  });

  it('a tool that requires approval is 202 awaiting_approval with the digest to approve; a retry says the same', async () => {
    const body = { tool: 'test.approved', arguments: { target: 'a' } };
    const res = await api.call(post('op-a', body));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ state: 'awaiting_approval', replayed: false });
    expect(res.body.arguments_digest).toMatch(/^v1:/);
    expect(typeof res.body.approval_deadline).toBe('string');
    const again = await api.call(post('op-a', body));
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ state: 'awaiting_approval', replayed: false });
    expect(again.headers['Idempotent-Replayed']).toBeUndefined();
    expect(approvalTool.starts).toHaveLength(0);
  });

  it('an uncertain outcome is 202 showing uncertain, and a retry does not run the tool', async () => {
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    const first = await api.call(post('op-u'));
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ state: 'uncertain' });
    const again = await api.call(post('op-u'));
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ state: 'uncertain', replayed: false });
    expect(again.headers['Idempotent-Replayed']).toBeUndefined();
    expect(tool.starts).toHaveLength(1);
  });

  it('the same key with a different digest is 422 idempotency_key_reused and runs nothing', async () => {
    await api.call(post('op-c'));
    const conflict = await api.call(post('op-c', { tool: 'test.effect', arguments: { target: 'b' } }));
    expect(conflict.status).toBe(422);
    expect(conflict.headers['Content-Type']).toBe('application/problem+json');
    expect(conflict.body).toMatchObject({
      code: 'idempotency_key_reused',
      status: 422,
      operation_id: 'op-c',
    });
    expect(tool.starts).toHaveLength(1);
  });

  it('the same key with a different digest is 422 also while the first call is still running', async () => {
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const first = api.call(post('op-c2'));
    await tool.started(1);
    const conflict = await api.call(post('op-c2', { tool: 'test.effect', arguments: { target: 'b' } }));
    expect(conflict.status).toBe(422);
    gate.open();
    expect((await first).status).toBe(201);
    expect(tool.starts).toHaveLength(1);
  });

  it('agent_run_id is kept and shown', async () => {
    const res = await api.call(
      post('op-run', { tool: 'test.effect', arguments: { target: 'a' }, agent_run_id: 'run-7' }),
    );
    expect(res.status).toBe(201);
    expect(res.body.agent_run_id).toBe('run-7');
  });

  it('an unknown tool is 400 tool_unknown and creates no record', async () => {
    for (const name of ['test.nope', 'Not A Tool Name\r\nX-Injected: 1']) {
      const res = await api.call(post('op-n', { tool: name, arguments: { target: 'a' } }));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('tool_unknown');
      expect(JSON.stringify(res.body)).not.toContain('X-Injected');
    }
    expect(await api.recordCount()).toBe(0);
  });

  it('arguments that fail the schema are 400 validation_failed with paths, no values, and no record', async () => {
    const res = await api.call(
      post('op-s', { tool: 'test.effect', arguments: { target: 42, extra: 'canary-qq' } }),
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(JSON.stringify(res.body)).not.toContain('canary-qq');
    expect(await api.recordCount()).toBe(0);
  });

  it('an invalid body followed by a valid one with the same key executes: the key was not consumed', async () => {
    expect((await api.call(post('op-v', { tool: 'test.effect', arguments: {} }))).status).toBe(400);
    expect((await api.call(post('op-v'))).status).toBe(201);
    expect(tool.effects).toHaveLength(1);
  });

  it('canonical arguments over 64 KiB are 413 payload_too_large and create no record', async () => {
    const res = await api.call(
      post('op-big', { tool: 'test.effect', arguments: { target: 'x'.repeat(70_000) } }),
    );
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    expect(await api.recordCount()).toBe(0);
  });

  it('a throttled ledger is 503 ledger_unavailable with Retry-After, runs nothing, and logs one error line', async () => {
    const client = db.newClient();
    const faulty = await testApi(client, [tool.tool]);
    injectFaults(client, [{ command: 'PutItemCommand', when: 'before', times: 100, error: throttling }]);
    const { result: res, lines } = await captureOutput(() =>
      faulty.call(post('op-503', { tool: 'test.effect', arguments: { target: 'canary-503' } })),
    );
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('ledger_unavailable');
    expect(Number(res.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(tool.starts).toHaveLength(0);
    const errors = lines.filter((l) => l.includes('"level":"ERROR"'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('"code":"ledger_unavailable"');
    expect(errors[0]).toContain('"error_class":"LedgerUnavailableError"');
    expect(lines.join('')).not.toContain('canary-503');
    expect(lines.join('')).not.toContain('Bearer');
  });
});

describe('the Idempotency-Key header', () => {
  it('an sf-string and a bare token name the same operation', async () => {
    expect((await api.call(post('"op-h"'))).status).toBe(201);
    const bare = await api.call(post('op-h'));
    expect(bare.status).toBe(201);
    expect(bare.headers['Idempotent-Replayed']).toBe('true');
  });

  it('the header name is case-insensitive', async () => {
    const res = await api.call({ ...post(null), headers: [['IDEMPOTENCY-KEY', 'op-case']] });
    expect(res.status).toBe(201);
    expect(res.body.operation_id).toBe('op-case');
  });

  it('255 characters work; 256 are 400 idempotency_key_invalid', async () => {
    expect((await api.call(post('k'.repeat(255)))).status).toBe(201);
    const long = await api.call(post('k'.repeat(256)));
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('idempotency_key_invalid');
  });

  it.each([
    ['missing', null, 'idempotency_key_missing'],
    ['empty', '', 'idempotency_key_missing'],
    ['blank', '   ', 'idempotency_key_missing'],
    ['empty sf-string', '""', 'idempotency_key_missing'],
    ['two sf-strings in one value', '"a", "b"', 'idempotency_key_invalid'],
    ['an unterminated sf-string', '"abc', 'idempotency_key_invalid'],
    ['a space inside', 'a b', 'idempotency_key_invalid'],
    ['non-ASCII', 'clé', 'idempotency_key_invalid'],
    ['CR LF injection', 'op\r\nSet-Cookie: x=1', 'idempotency_key_invalid'],
  ])('%s is 400 %s and creates no record', async (_name, key, code) => {
    const res = await api.call(post(key));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(code);
    expect(JSON.stringify(res.raw.headers)).not.toContain('Set-Cookie');
    expect(res.raw.body).not.toContain('Set-Cookie');
    expect(await api.recordCount()).toBe(0);
    expect(tool.starts).toHaveLength(0);
  });

  it('two Idempotency-Key headers (multiValueHeaders) are 400, even when equal', async () => {
    for (const values of [
      ['op-1', 'op-2'],
      ['op-1', 'op-1'],
    ]) {
      const res = await api.call({
        ...post(null),
        headers: values.map((v) => ['Idempotency-Key', v] as [string, string]),
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('idempotency_key_invalid');
    }
    expect(await api.recordCount()).toBe(0);
  });

  it('two headers whose names differ only in case are two keys: 400', async () => {
    const res = await api.call({
      ...post(null),
      headers: [
        ['Idempotency-Key', 'op-1'],
        ['idempotency-key', 'op-2'],
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('idempotency_key_invalid');
  });

  it('an ID with reserved URL characters round-trips through Location', async () => {
    const id = 'a/b%c?d#e';
    const res = await api.call(post(id));
    expect(res.status).toBe(201);
    expect(res.headers.Location).toBe('/v1/operations/a%2Fb%25c%3Fd%23e');
    const read = await api.call({ path: res.headers.Location as string });
    expect(read.status).toBe(200);
    expect(read.body.operation_id).toBe(id);
  });
});
