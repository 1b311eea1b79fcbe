import type { Context } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { parse, type TestApi, testApi, toEvent } from './support';

/**
 * `POST /v1/reconciliations`: one reconciler pass over the caller's tenant on an operator's request
 * (what `tool-ledger reconcile` calls). Its decisions are the scheduled pass's own, so these tests
 * check the route's contract: who may call it, what it answers, that it acts as a scheduled pass
 * would, and that it never reaches another tenant.
 */

const db = useDynalite();
let tool: ScriptedTool;
let approvalTool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  approvalTool = new ScriptedTool('test.approved', { requiresApproval: true });
  api = await testApi(db.client, [tool.tool, approvalTool.tool], { approvalTtlSeconds: 60 });
});

/** An operation left `uncertain` after its effect happened (a reset after sending). */
async function uncertain(id: string, token = 'agent-a') {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const res = await api.call({
    method: 'POST',
    path: '/v1/operations',
    token,
    key: id,
    body: { tool: 'test.effect', arguments: { target: id } },
  });
  expect(res.body.state).toBe('uncertain');
}

function pass(token = 'operator-a', extra: { body?: unknown; query?: [string, string][] } = {}) {
  return api.call({ method: 'POST', path: '/v1/reconciliations', token, ...extra });
}

function read(id: string, token = 'operator-a') {
  return api.call({ path: `/v1/operations/${encodeURIComponent(id)}`, token });
}

describe('POST /v1/reconciliations', () => {
  it("runs one pass over the operator's tenant and answers its counts", async () => {
    await uncertain('u-1');
    await uncertain('u-2');
    api.ledger.advance(10 * 60_000);
    const res = await pass();
    expect(res.status).toBe(200);
    expect(res.headers['Content-Type']).toBe('application/json');
    expect(res.headers['Cache-Control']).toBe('no-store');
    const shards = res.body.shards as { shard: string; read: number; acted: number }[];
    expect(shards.map((s) => s.shard)).toEqual(['tenant']);
    expect(shards.reduce((sum, s) => sum + s.read, 0)).toBe(2);
    expect(shards.reduce((sum, s) => sum + s.acted, 0)).toBe(2);
    expect(res.body).toMatchObject({
      read: 2,
      skipped: 0,
      actions: { reconciled_applied: 2 },
      complete: true,
    });
    expect(res.body.pages).toBeGreaterThanOrEqual(1);
    expect(Object.keys(res.body).sort()).toEqual([
      'actions',
      'complete',
      'deferred',
      'pages',
      'read',
      'shards',
      'skipped',
    ]);
    for (const id of ['u-1', 'u-2']) {
      expect((await read(id)).body).toMatchObject({ state: 'succeeded', reconciled: true });
    }
    // The pass never runs the effect again: one execute per operation, ever.
    expect(tool.starts).toHaveLength(2);
  });

  it('acts as the scheduled pass does: a second pass finds nothing left, an expired approval is rejected', async () => {
    const submitted = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'needs-approval',
      body: { tool: 'test.approved', arguments: { target: 'x' } },
    });
    expect(submitted.body.state).toBe('awaiting_approval');
    expect((await pass()).body).toMatchObject({ read: 0, actions: {} });
    api.ledger.advance(61_000);
    const res = await pass();
    expect(res.body).toMatchObject({ read: 1, actions: { approval_expired: 1 } });
    expect((await read('needs-approval')).body).toMatchObject({
      state: 'rejected',
      error: { code: 'approval_expired' },
    });
    expect((await pass()).body).toMatchObject({ read: 0, actions: {} });
    expect(approvalTool.starts).toHaveLength(0);
  });

  it('agents and approvers get 403 forbidden and nothing is decided', async () => {
    await uncertain('u-1');
    api.ledger.advance(10 * 60_000);
    for (const token of ['agent-a', 'approver-a', 'agent-b']) {
      const res = await pass(token);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
    expect((await read('u-1')).body.state).toBe('uncertain');
  });

  it('needs credentials (401)', async () => {
    const res = await pass(null as unknown as string);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthenticated');
  });

  it('is scoped to the caller’s tenant: another tenant’s operator neither acts on nor counts its records', async () => {
    await uncertain('acme-op', 'agent-a');
    api.ledger.advance(10 * 60_000);
    const other = await pass('operator-b');
    expect(other.status).toBe(200);
    expect(other.body).toMatchObject({ read: 0, actions: {}, complete: true });
    expect(other.raw.body).not.toContain('acme');
    expect((await read('acme-op')).body.state).toBe('uncertain');
    const own = await pass('operator-a');
    expect(own.body).toMatchObject({ read: 1, actions: { reconciled_applied: 1 } });
    expect((await read('acme-op')).body.state).toBe('succeeded');
  });

  it('two passes at once act on each record once: the loser of each conditional write skips it', async () => {
    for (const id of ['c-1', 'c-2', 'c-3']) await uncertain(id);
    api.ledger.advance(10 * 60_000);
    const [a, b] = await Promise.all([pass(), pass()]);
    const applied = (r: typeof a) => (r.body.actions as Record<string, number>).reconciled_applied ?? 0;
    expect(applied(a) + applied(b)).toBe(3);
    for (const id of ['c-1', 'c-2', 'c-3']) {
      expect((await read(id)).body.state).toBe('succeeded');
      expect(
        api.ledger.logs.filter((l) => l.operation_id === id && l.state_after === 'succeeded'),
      ).toHaveLength(1);
    }
  });

  it('takes no body or an empty JSON object; anything else, or a query parameter, is 400', async () => {
    expect((await pass('operator-a', { body: {} })).status).toBe(200);
    const withField = await pass('operator-a', { body: { tenant: 'acme' } });
    expect(withField.status).toBe(400);
    expect(withField.body.code).toBe('validation_failed');
    const withQuery = await pass('operator-a', { query: [['shard', 's001']] });
    expect(withQuery.status).toBe(400);
    expect(withQuery.body.code).toBe('validation_failed');
  });

  it('GET is 405 with Allow: POST', async () => {
    const res = await api.call({ path: '/v1/reconciliations', token: 'operator-a' });
    expect(res.status).toBe(405);
    expect(res.headers.Allow).toBe('POST');
  });
});

describe('POST /v1/reconciliations with a slow check', () => {
  it('never blocks on it: what does not fit the API’s time is left for the schedule, the rest is decided', async () => {
    let remaining = 29_000;
    const slow = new ScriptedTool('test.slow', {
      timeoutMs: 15_000,
      reconcile: async () => {
        remaining -= 15_000; // what the call costs the request
        return { status: 'applied', result: null };
      },
    });
    const slowApi = await testApi(db.client, [tool.tool, slow.tool]);
    for (let i = 0; i < 4; i++) {
      tool.next({ kind: 'uncertain', code: 'reset_after_send' });
      await slowApi.call({
        method: 'POST',
        path: '/v1/operations',
        key: `fast-${i}`,
        body: { tool: 'test.effect', arguments: { target: `f${i}` } },
      });
    }
    // Created last, so the newest first: the operator's listing order puts them ahead of the fast ones.
    for (let i = 0; i < 3; i++) {
      slow.next({ kind: 'uncertain', code: 'reset_after_send' });
      await slowApi.call({
        method: 'POST',
        path: '/v1/operations',
        key: `slow-${i}`,
        body: { tool: 'test.slow', arguments: { target: `s${i}` } },
      });
    }
    slowApi.ledger.advance(60_000);
    const context = {
      awsRequestId: 'r-slow',
      getRemainingTimeInMillis: () => remaining,
    } as unknown as Context;
    const res = parse(
      await slowApi.handler(
        toEvent({ method: 'POST', path: '/v1/reconciliations', token: 'operator-a' }),
        context,
      ),
    );

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      complete: false,
      deferred: 2,
      actions: { reconciled_applied: 5, left_for_schedule: 2 },
    });
    for (let i = 0; i < 4; i++) {
      expect((await slowApi.call({ path: `/v1/operations/fast-${i}`, token: 'operator-a' })).body.state).toBe(
        'succeeded',
      );
    }
  });
});
