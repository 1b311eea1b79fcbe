import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { TENANT_PATTERN } from '../../functions/contract/table';
import { captureOutput, type TestApi, type TestResponse, testApi } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { Gate, ScriptedTool } from '../support/harness';

/**
 * Tenant isolation on every route (SPEC §1, §5): tenants `acme` and `other` use the same operation IDs
 * and never see or touch each other's records. A record of another tenant is answered exactly like an
 * ID nobody used (404, same body apart from the request ID), never 403, so a caller cannot even learn
 * that the ID exists elsewhere. test/http/routes.test.ts and approval-resolution.test.ts hold single
 * cases of this; here every route is crossed with records in every state, with IDs chosen to collide.
 */

const db = useDynalite();
let effect: ScriptedTool;
let approval: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  effect = new ScriptedTool('test.effect');
  approval = new ScriptedTool('test.approve', { requiresApproval: true });
  api = await testApi(db.client, [effect.tool, approval.tool]);
});

/** IDs that collide across tenants, including ones that look like the key separator or a tenant. */
const SHARED_IDS = ['op-1', 'acme#op-1', 'other#op-1', '#', 'a%2Fb', 'op-1#other'];

function submit(id: string, tool: string, target: string, token: string, headers: [string, string][] = []) {
  return api.call({
    method: 'POST',
    path: '/v1/operations',
    key: id,
    token,
    headers,
    body: { tool, arguments: { target } },
  });
}

function path(id: string, suffix = ''): string {
  return `/v1/operations/${encodeURIComponent(id)}${suffix}`;
}

/** A 404 that says nothing more than "no such operation". */
function expectNotFound(res: TestResponse, none: TestResponse): void {
  expect(res.status).toBe(404);
  expect(res.body.code).toBe('not_found');
  expect({ ...res.body, request_id: null }).toEqual({ ...none.body, request_id: null });
}

/** The tenant's view of one ID, with arguments and history, to prove the other tenant changed nothing. */
async function snapshot(id: string, token: string): Promise<unknown> {
  const res = await api.call({ path: path(id), token, query: [['include', 'arguments,history']] });
  return res.body;
}

describe('two tenants, the same operation IDs', () => {
  it('submitting the same ID and even the same arguments in tenant B runs B’s own operation: never a replay of A’s, never a conflict', async () => {
    for (const id of SHARED_IDS) {
      const a = await submit(id, 'test.effect', 'same', 'agent-a');
      const b = await submit(id, 'test.effect', 'same', 'agent-b');
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.body.replayed).toBe(false);
      expect(b.headers['Idempotent-Replayed']).toBeUndefined();
      // Other arguments under the same ID in B: B's replay conflicts with B's record, not A's.
      const bOther = await submit(id, 'test.effect', 'different', 'agent-b');
      expect(bOther.status).toBe(422);
      const aReplay = await submit(id, 'test.effect', 'same', 'agent-a');
      expect(aReplay.headers['Idempotent-Replayed']).toBe('true');
      expect(effect.effectsOf(id)).toBe(2);
    }
  });

  it('a live lease in tenant A does not hold up tenant B (no 409 across tenants)', async () => {
    // A's call holds its lease until the gate opens, so B's call always meets it live.
    const gate = new Gate();
    effect.next({ kind: 'succeed', gate });
    const slow = submit('op-1', 'test.effect', 'a', 'agent-a');
    await effect.started(1);
    const b = await submit('op-1', 'test.effect', 'b', 'agent-b');
    expect(b.status).toBe(201);
    gate.open();
    expect((await slow).status).toBe(201);
  });

  it('GET: each tenant reads only its own record; a tenant without one gets the same 404 as for an unused ID', async () => {
    for (const id of SHARED_IDS) await submit(id, 'test.effect', `a-${id}`, 'agent-a');
    await submit('op-1', 'test.effect', 'b-op-1', 'agent-b');
    const none = await api.call({ path: path('never-used'), token: 'operator-b' });
    for (const id of SHARED_IDS) {
      for (const token of ['agent-b', 'approver-b', 'operator-b']) {
        const res = await api.call({
          path: path(id),
          token,
          query: token === 'agent-b' ? [] : [['include', 'arguments']],
        });
        if (id === 'op-1') expect(res.body.arguments ?? res.body.result).toMatchObject({ target: 'b-op-1' });
        else expectNotFound(res, none);
      }
    }
  });

  it('approval: an approver of B gets 404 for A’s operation; with a record of its own under that ID it decides only its own', async () => {
    const a = await submit('op-1', 'test.approve', 'a', 'agent-a');
    const before = await snapshot('op-1', 'all-a');
    const none = await api.call({
      method: 'POST',
      path: path('never-used', '/approval'),
      token: 'approver-b',
      body: { decision: 'approve', arguments_digest: a.body.arguments_digest },
    });
    for (const decision of ['approve', 'reject']) {
      const res = await api.call({
        method: 'POST',
        path: path('op-1', '/approval'),
        token: 'approver-b',
        body: { decision, arguments_digest: a.body.arguments_digest },
      });
      expectNotFound(res, none);
    }
    const b = await submit('op-1', 'test.approve', 'b', 'agent-b');
    // A's digest names A's arguments: B's record does not match it.
    const wrong = await api.call({
      method: 'POST',
      path: path('op-1', '/approval'),
      token: 'approver-b',
      body: { decision: 'approve', arguments_digest: a.body.arguments_digest },
    });
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('approval_mismatch');
    expect(wrong.body.arguments_digest).toBe(b.body.arguments_digest);
    const right = await api.call({
      method: 'POST',
      path: path('op-1', '/approval'),
      token: 'approver-b',
      body: { decision: 'approve', arguments_digest: b.body.arguments_digest },
    });
    expect(right.body.state).toBe('queued');
    expect(api.ledger.queue.messages.map((m) => m.tenant)).toEqual(['other']);
    expect(await snapshot('op-1', 'all-a')).toEqual(before);
  });

  it('resolution: an operator of B gets 404 for A’s uncertain operation; with its own it resolves only its own', async () => {
    effect.next({ kind: 'uncertain', code: 'lost' }, { kind: 'uncertain', code: 'lost' });
    await submit('op-1', 'test.effect', 'a', 'agent-a');
    const before = await snapshot('op-1', 'all-a');
    const none = await api.call({
      method: 'POST',
      path: path('never-used', '/resolution'),
      token: 'operator-b',
      body: { outcome: 'applied', attempt: 1 },
    });
    for (const outcome of ['applied', 'not_applied', 'failed']) {
      const res = await api.call({
        method: 'POST',
        path: path('op-1', '/resolution'),
        token: 'operator-b',
        body: { outcome, attempt: 1 },
      });
      expectNotFound(res, none);
    }
    await submit('op-1', 'test.effect', 'b', 'agent-b');
    const own = await api.call({
      method: 'POST',
      path: path('op-1', '/resolution'),
      token: 'operator-b',
      body: { outcome: 'failed', attempt: 1 },
    });
    expect(own.body.state).toBe('failed_terminal');
    expect(await snapshot('op-1', 'all-a')).toEqual(before);
  });

  it('listing: each operator sees exactly its own tenant’s unresolved operations, page after page', async () => {
    effect.defaultBehaviour = { kind: 'uncertain', code: 'lost' };
    const digests: Record<string, Set<string>> = { 'operator-a': new Set(), 'operator-b': new Set() };
    for (const [agent, operator] of [
      ['agent-a', 'operator-a'],
      ['agent-b', 'operator-b'],
    ] as const) {
      for (const id of SHARED_IDS) {
        const res = await submit(id, 'test.effect', `${agent}-${id}`, agent);
        digests[operator]?.add(res.body.arguments_digest as string);
      }
    }
    for (const operator of ['operator-a', 'operator-b'] as const) {
      const seen = new Set<string>();
      let cursor: string | null = null;
      do {
        const query: [string, string][] = [['limit', '2']];
        if (cursor) query.push(['cursor', cursor]);
        const page = await api.call({ path: '/v1/operations', token: operator, query });
        expect(page.status).toBe(200);
        for (const op of page.body.operations as { arguments_digest: string }[])
          seen.add(op.arguments_digest);
        cursor = page.body.next_cursor as string | null;
      } while (cursor);
      expect(seen).toEqual(digests[operator]);
    }
  });

  it('another tenant’s listing cursor never shows that tenant’s records', async () => {
    effect.defaultBehaviour = { kind: 'uncertain', code: 'lost' };
    for (const id of ['q-1', 'q-2', 'q-3']) await submit(id, 'test.effect', `b-${id}`, 'agent-b');
    const own = await submit('q-1', 'test.effect', 'a-q-1', 'agent-a');
    const page = await api.call({ path: '/v1/operations', token: 'operator-b', query: [['limit', '1']] });
    const cursor = page.body.next_cursor as string;
    expect(typeof cursor).toBe('string');
    // Today this is a 500 (the known bug of test/fuzz/http-headers.test.ts, forged cursor); whatever the
    // answer, it must not carry B's records.
    const { result: res } = await captureOutput(() =>
      api.call({ path: '/v1/operations', token: 'operator-a', query: [['cursor', cursor]] }),
    );
    if (res.status === 200) {
      for (const op of res.body.operations as { arguments_digest: string }[]) {
        expect(op.arguments_digest).toBe(own.body.arguments_digest);
      }
    } else {
      expect(JSON.stringify(res.body)).not.toContain('b-q-');
    }
  });
});

describe('POST /v1/reconciliations (a pass over the caller’s own tenant)', () => {
  it('answers counts only, never touches another tenant’s operations, and reconciles the caller’s own', async () => {
    effect.reconcileVerdict = 'applied';
    effect.next({ kind: 'uncertain', code: 'lost' });
    await submit('op-1', 'test.effect', 'secret-of-a', 'agent-a');
    const res = await api.call({
      method: 'POST',
      path: '/v1/reconciliations',
      token: 'operator-b',
      body: {},
    });
    expect(res.status).toBe(200);
    const text = JSON.stringify(res.body);
    for (const leak of ['op-1', 'acme', 'secret-of-a', 'arguments_digest', 'v1:'])
      expect(text).not.toContain(leak);
    // Tenant b's operator ran a pass over tenant b alone: tenant a's operation was not reconciled.
    const untouched = await api.call({ path: path('op-1'), token: 'operator-a' });
    expect(untouched.body).toMatchObject({ state: 'uncertain' });
    expect(effect.effectsOf('op-1')).toBe(1);

    const own = await api.call({
      method: 'POST',
      path: '/v1/reconciliations',
      token: 'operator-a',
      body: {},
    });
    expect(own.status).toBe(200);
    const a = await api.call({ path: path('op-1'), token: 'operator-a' });
    expect(a.body).toMatchObject({ state: 'succeeded', reconciled: true });
    expect(effect.effectsOf('op-1')).toBe(1);
  });
});

describe('record keys', () => {
  it('are injective: no tenant and operation ID share a key with any other pair, whatever the ID contains', () => {
    const tenant = fc.stringMatching(TENANT_PATTERN);
    const id = fc.stringMatching(/^[\x21-\x7e]{1,20}$/);
    fc.assert(
      fc.property(tenant, id, tenant, id, (t1, id1, t2, id2) => {
        const same = operationKey(t1, id1).pk === operationKey(t2, id2).pk;
        expect(same).toBe(t1 === t2 && id1 === id2);
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuse a tenant label that could forge another tenant’s key', () => {
    for (const tenant of ['acme#x', '', 'a b', 'acme\u0000'])
      expect(() => operationKey(tenant, 'op')).toThrow();
  });
});
