import { beforeEach, describe, expect, it } from 'vitest';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type TestApi, testApi } from './support';

const db = useDynalite();
let tool: ScriptedTool;
let approvalTool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  approvalTool = new ScriptedTool('test.approved', { requiresApproval: true });
  api = await testApi(db.client, [tool.tool, approvalTool.tool]);
});

/** Reserves an operation awaiting approval as `token` and returns its digest. */
async function awaiting(id: string, token = 'agent-a', target = 'a'): Promise<string> {
  const res = await api.call({
    method: 'POST',
    path: '/v1/operations',
    token,
    key: id,
    body: { tool: 'test.approved', arguments: { target } },
  });
  expect(res.status).toBe(202);
  return res.body.arguments_digest as string;
}

function decide(id: string, decision: string, digest: string, token = 'approver-a') {
  return api.call({
    method: 'POST',
    path: `/v1/operations/${encodeURIComponent(id)}/approval`,
    token,
    body: { decision, arguments_digest: digest },
  });
}

describe('POST /v1/operations/{id}/approval', () => {
  it('approve moves the operation to queued, enqueues it once, and approving again is 200 (idempotent)', async () => {
    const digest = await awaiting('op-1');
    const first = await decide('op-1', 'approve', digest);
    expect(first.status).toBe(200);
    expect(first.headers['Cache-Control']).toBe('no-store');
    expect(first.body).toMatchObject({ operation_id: 'op-1', state: 'queued' });
    expect(first.body.approval).toMatchObject({ decision: 'approve', arguments_digest: digest });
    expect((first.body.approval as { by: string }).by).toMatch(/^token:[0-9a-f]{8}$/);
    const again = await decide('op-1', 'approve', digest);
    expect(again.status).toBe(200);
    expect(again.body.state).toBe('queued');
    expect(api.ledger.queue.messages).toHaveLength(1);
    expect(approvalTool.starts).toHaveLength(0);
  });

  it('reject moves it to rejected; an agent retry then replays the rejection (201) without running', async () => {
    const digest = await awaiting('op-r');
    const res = await decide('op-r', 'reject', digest);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('rejected');
    const retry = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-r',
      body: { tool: 'test.approved', arguments: { target: 'a' } },
    });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ state: 'rejected', replayed: true });
    expect(approvalTool.starts).toHaveLength(0);
  });

  it('the opposite decision is 409 state_changed with the record in the problem body', async () => {
    const digest = await awaiting('op-s');
    expect((await decide('op-s', 'approve', digest)).status).toBe(200);
    const res = await decide('op-s', 'reject', digest);
    expect(res.status).toBe(409);
    expect(res.headers['Content-Type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({
      code: 'state_changed',
      state: 'queued',
      operation: { operation_id: 'op-s', state: 'queued' },
    });
  });

  it('a decision on an operation that never needed approval is 409 state_changed', async () => {
    const done = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-d',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    const res = await decide('op-d', 'approve', done.body.arguments_digest as string);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'state_changed', operation: { state: 'succeeded' } });
  });

  it('a digest that is not the record’s is 409 approval_mismatch and changes nothing', async () => {
    await awaiting('op-m');
    const res = await decide('op-m', 'approve', `v1:${'0'.repeat(64)}`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('approval_mismatch');
    const read = await api.call({ path: '/v1/operations/op-m' });
    expect(read.body.state).toBe('awaiting_approval');
    expect(api.ledger.queue.messages).toHaveLength(0);
  });

  it('the requester may not approve its own operation (403 self_approval)', async () => {
    const digest = await awaiting('op-self', 'all-a');
    const res = await decide('op-self', 'approve', digest, 'all-a');
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('self_approval');
    expect(api.ledger.queue.messages).toHaveLength(0);
  });

  it('TOOL_LEDGER_ALLOW_SELF_APPROVAL=true lets the requester approve', async () => {
    api = await testApi(db.client, [approvalTool.tool], { allowSelfApproval: true });
    const digest = await awaiting('op-self', 'all-a');
    const res = await decide('op-self', 'approve', digest, 'all-a');
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('queued');
  });

  it('an agent cannot approve (403 forbidden) and an operator cannot either', async () => {
    const digest = await awaiting('op-role');
    for (const token of ['agent-a', 'operator-a']) {
      const res = await decide('op-role', 'approve', digest, token);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
  });

  it('an approver of tenant B gets 404 for tenant A’s operation, never 403', async () => {
    const digest = await awaiting('op-iso');
    const res = await decide('op-iso', 'approve', digest, 'approver-b');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    const missing = await decide('op-none', 'approve', digest, 'approver-a');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ ...res.body, request_id: missing.body.request_id });
  });

  it.each([
    ['an unknown decision', { decision: 'maybe', arguments_digest: `v1:${'0'.repeat(64)}` }],
    ['a malformed digest', { decision: 'approve', arguments_digest: 'sha256:abc' }],
    ['a missing digest', { decision: 'approve' }],
    ['an extra field', { decision: 'approve', arguments_digest: `v1:${'0'.repeat(64)}`, tenant: 'other' }],
  ])('%s is 400 validation_failed', async (_name, body) => {
    await awaiting('op-v');
    const res = await api.call({
      method: 'POST',
      path: '/v1/operations/op-v/approval',
      token: 'approver-a',
      body,
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
  });
});

/** Makes an operation uncertain (the tool applied, then the response was lost). */
async function uncertain(id: string): Promise<void> {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const res = await api.call({
    method: 'POST',
    path: '/v1/operations',
    key: id,
    body: { tool: 'test.effect', arguments: { target: 'a' } },
  });
  expect(res.body.state).toBe('uncertain');
}

function resolve(id: string, body: unknown, token = 'operator-a') {
  return api.call({ method: 'POST', path: `/v1/operations/${id}/resolution`, token, body });
}

describe('POST /v1/operations/{id}/resolution', () => {
  it('applied → succeeded with resolved_by and the result; the same resolution again is 200', async () => {
    await uncertain('op-1');
    const res = await resolve('op-1', { outcome: 'applied', result: { checked: true }, attempt: 1 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'succeeded', result: { checked: true } });
    expect(res.body.resolved_by).toMatch(/^token:/);
    const again = await resolve('op-1', { outcome: 'applied', result: { checked: true }, attempt: 1 });
    expect(again.status).toBe(200);
    const replay = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-1',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    expect(replay.status).toBe(201);
    expect(replay.body).toMatchObject({ state: 'succeeded', replayed: true, result: { checked: true } });
    expect(tool.starts).toHaveLength(1);
  });

  it('not_applied → failed_retryable, and failed → failed_terminal', async () => {
    await uncertain('op-n');
    expect((await resolve('op-n', { outcome: 'not_applied', attempt: 1 })).body.state).toBe(
      'failed_retryable',
    );
    await uncertain('op-f');
    const failed = await resolve('op-f', { outcome: 'failed', attempt: 1 });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ state: 'failed_terminal', error: { code: 'resolved_failed' } });
  });

  it('only uncertain or needs_reconciliation can be resolved: a succeeded record is 409 state_changed', async () => {
    await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-ok',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    const res = await resolve('op-ok', { outcome: 'failed', attempt: 1 });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'state_changed', operation: { state: 'succeeded' } });
  });

  it('with attempt, it applies only at that attempt', async () => {
    await uncertain('op-at');
    const res = await resolve('op-at', { outcome: 'applied', attempt: 7 });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'state_changed', operation: { state: 'uncertain', attempt: 1 } });
    expect((await resolve('op-at', { outcome: 'applied', attempt: 1 })).status).toBe(200);
  });

  it('agents and approvers cannot resolve (403); another tenant’s operator gets 404', async () => {
    await uncertain('op-role');
    for (const token of ['agent-a', 'approver-a']) {
      expect((await resolve('op-role', { outcome: 'applied', attempt: 1 }, token)).status).toBe(403);
    }
    expect((await resolve('op-role', { outcome: 'applied', attempt: 1 }, 'operator-b')).status).toBe(404);
    const read = await api.call({ path: '/v1/operations/op-role' });
    expect(read.body.state).toBe('uncertain');
  });

  it.each([
    ['an unknown outcome', { outcome: 'maybe' }],
    ['a negative attempt', { outcome: 'applied', attempt: -1 }],
    ['a fractional attempt', { outcome: 'applied', attempt: 1.5 }],
    ['a result with not_applied', { outcome: 'not_applied', result: {}, attempt: 1 }],
    ['an attempt that is not a number', { outcome: 'not_applied', attempt: '1' }],
  ])('%s is 400 validation_failed', async (_name, body) => {
    await uncertain('op-v');
    const res = await resolve('op-v', body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
  });

  it('a resolution without attempt is 400 validation_failed naming attempt, and the record stays as it was', async () => {
    await uncertain('op-na');
    const before = await api.call({ path: '/v1/operations/op-na' });
    const res = await resolve('op-na', { outcome: 'not_applied' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: '$.attempt' }] });
    expect((await api.call({ path: '/v1/operations/op-na' })).body).toEqual(before.body);
    expect(tool.starts).toHaveLength(1);
  });

  it('not_applied retried after the next attempt started is 409 state_changed: exactly one extra attempt', async () => {
    await uncertain('op-twice');
    const first = await resolve('op-twice', { outcome: 'not_applied', attempt: 1 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ state: 'failed_retryable', attempt: 1 });
    // The client retries on a lost response: the same resolution of the same attempt is 200.
    const repeat = await resolve('op-twice', { outcome: 'not_applied', attempt: 1 });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ state: 'failed_retryable', attempt: 1 });
    // The caller's retry claims attempt 2, which ends uncertain again.
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    const retried = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-twice',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    expect(retried.body).toMatchObject({ state: 'uncertain', attempt: 2 });
    const late = await resolve('op-twice', { outcome: 'not_applied', attempt: 1 });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'state_changed', operation: { state: 'uncertain', attempt: 2 } });
    expect(tool.starts.map((s) => s.attempt)).toEqual([1, 2]);
    expect(api.ledger.queue.messages).toHaveLength(0);
  });
});
