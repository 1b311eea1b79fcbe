import { beforeEach, describe, expect, it } from 'vitest';
import { parseCallerTools } from '../../functions/domain/caller-tools';
import { claimOwner } from '../../functions/domain/claim-token';
import { useDynalite } from '../support/dynalite';
import {
  CALLER_TOOL,
  type CallerApi,
  callerApi,
  claimOf,
  claimRequest,
  LEDGER_TOOL,
  postTo,
  readRequest,
  useFauxqs,
} from './caller-support';

/**
 * The claim of an operation its caller executes (`POST /v1/operations` with `"execution": "caller"`),
 * at the HTTP level through the API handler, on dynalite and fauxqs started here.
 */

const db = useDynalite();
const fauxqs = useFauxqs();
let api: CallerApi;

beforeEach(async () => {
  api = await callerApi(db, fauxqs);
});

const CLAIM_ID = 'c1aim-id-0123456789abcdefXYZ';

describe('claiming an operation the caller executes', () => {
  it('a new operation is reserved into pending at attempt 1 and the answer alone carries the claim', async () => {
    const before = api.ledger.deps.clock();
    const res = await api.call(claimRequest('op-1'));
    expect(res.status).toBe(200);
    expect(res.headers.Location).toBe('/v1/operations/op-1');
    expect(res.body).toMatchObject({
      operation_id: 'op-1',
      tool: CALLER_TOOL,
      state: 'pending',
      attempt: 1,
      replayed: false,
      execution: 'caller',
    });
    const claim = claimOf(res);
    expect(claim.token).toMatch(/^tlc1\.1\.[A-Za-z0-9_-]{43}$/);
    expect(claim.attempt).toBe(1);
    expect(claim.downstream_key).toMatch(/^tl2_[A-Za-z0-9_-]{43}$/);
    expect(res.body.downstream_key).toBe(claim.downstream_key);
    // The default lease: 60 s from the request, no grace.
    const expires = Date.parse(claim.lease_expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 60_000);
    expect(expires).toBeLessThanOrEqual(api.ledger.deps.clock() + 60_000);
    expect(res.body.lease_expires_at).toBe(claim.lease_expires_at);

    // The record holds the token's hash, never the token; the policy is fixed on it.
    const record = await api.ledger.store.get({ pk: 'acme#op-1', sk: 'op' });
    expect(record?.lease_owner).toBe(claimOwner(claim.token));
    expect(JSON.stringify(record)).not.toContain(claim.token);
    expect(record?.policy).toEqual({
      execution: 'caller',
      requires_approval: false,
      downstream_idempotent: false,
      max_attempts: 3,
      lease_seconds: 60,
    });
    expect(await api.queueDepth()).toBe(0);
  });

  it('the views show who executes it, its downstream key and lease, and never the token or its hash', async () => {
    const claim = claimOf(await api.call(claimRequest('op-view', { agent_run_id: 'run-7' })));
    const owner = claimOwner(claim.token);
    const read = await api.call(readRequest('op-view'));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      execution: 'caller',
      downstream_key: claim.downstream_key,
      lease_expires_at: claim.lease_expires_at,
      state: 'pending',
      agent_run_id: 'run-7',
    });
    expect(read.body.claim).toBeUndefined();
    const list = await api.call({ path: '/v1/operations', token: 'operator-a' });
    expect(list.status).toBe(200);
    const listed = (list.body.operations as Record<string, unknown>[]).find(
      (o) => o.operation_id === 'op-view',
    );
    expect(listed).toMatchObject({ execution: 'caller', downstream_key: claim.downstream_key });
    const secretPart = claim.token.split('.')[2] as string;
    for (const text of [
      JSON.stringify(read.body),
      JSON.stringify(list.body),
      JSON.stringify(api.ledger.logs),
    ]) {
      expect(text).not.toContain(secretPart);
      expect(text).not.toContain(owner.slice('caller:'.length));
    }
    // The history names the principal that claimed, not the claim.
    const history = read.body.history as { by: string }[];
    expect(history.map((h) => h.by).every((by) => by.startsWith('token:'))).toBe(true);
  });

  it('another claim while the claim is live is 409 operation_in_progress, with or without another claim_id', async () => {
    const first = claimOf(await api.call(claimRequest('op-busy', { claim_id: CLAIM_ID })));
    const plain = await api.call(claimRequest('op-busy'));
    expect(plain.status).toBe(409);
    expect(plain.body).toMatchObject({ code: 'operation_in_progress', state: 'pending' });
    expect(plain.headers['Retry-After']).toBe('1');
    expect(JSON.stringify(plain.body)).not.toContain(first.token);
    const other = await api.call(claimRequest('op-busy', { claim_id: `${CLAIM_ID}-other` }));
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('operation_in_progress');
    expect(JSON.stringify(other.body)).not.toContain(first.token);
  });

  it('the same claim request with the same claim_id gets the same claim back while it is live (a lost answer)', async () => {
    const first = claimOf(await api.call(claimRequest('op-lost', { claim_id: CLAIM_ID })));
    api.ledger.advance(10_000);
    const again = await api.call(claimRequest('op-lost', { claim_id: CLAIM_ID }));
    expect(again.status).toBe(200);
    expect(claimOf(again)).toEqual(first);
    // Its token is the claim: the outcome lands with it.
    const done = await api.call(postTo('op-lost', 'outcome', { token: first.token, outcome: 'succeeded' }));
    expect(done.status).toBe(200);
    expect(done.body.state).toBe('succeeded');
  });

  it('of many claim requests at once, exactly one gets a claim; the others are 409 and hold no token', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => api.call(claimRequest('op-race'))));
    const won = answers.filter((a) => a.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(11);
    const token = claimOf(won[0]!).token;
    const record = await api.ledger.store.get({ pk: 'acme#op-race', sk: 'op' });
    expect(record).toMatchObject({ attempt: 1, lease_owner: claimOwner(token) });
  });

  it('a claim_id also recovers the claim of a later attempt', async () => {
    const first = claimOf(await api.call(claimRequest('op-lost-2')));
    await api.call(postTo('op-lost-2', 'outcome', { token: first.token, outcome: 'failed_retryable' }));
    const second = claimOf(await api.call(claimRequest('op-lost-2', { claim_id: CLAIM_ID })));
    expect(second.attempt).toBe(2);
    const again = await api.call(claimRequest('op-lost-2', { claim_id: CLAIM_ID }));
    expect(claimOf(again)).toEqual(second);
    expect((await api.call(claimRequest('op-lost-2', { claim_id: `${CLAIM_ID}x` }))).status).toBe(409);
  });

  it('a claim_id whose claim has expired gets no claim back: 202 with the record as it stands', async () => {
    claimOf(await api.call(claimRequest('op-late', { claim_id: CLAIM_ID, lease_seconds: 5 })));
    api.ledger.advance(6_000);
    const again = await api.call(claimRequest('op-late', { claim_id: CLAIM_ID }));
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ state: 'pending', attempt: 1 });
    expect(again.body.claim).toBeUndefined();
  });

  it('the same key with other arguments is 422 and changes nothing', async () => {
    const first = claimOf(await api.call(claimRequest('op-conflict')));
    const res = await api.call(
      claimRequest('op-conflict', { arguments: { email: 'someone-else@example.com' } }),
    );
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('idempotency_key_reused');
    const record = await api.ledger.store.get({ pk: 'acme#op-conflict', sk: 'op' });
    expect(record).toMatchObject({ state: 'pending', attempt: 1, lease_owner: claimOwner(first.token) });
    // A ledger-executed call with the same key is a conflict too (another tool, another digest).
    const ledgerCall = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-conflict',
      body: { tool: LEDGER_TOOL, arguments: { target: 'x' } },
    });
    expect(ledgerCall.status).toBe(422);
    expect(api.tool.starts).toHaveLength(0);
  });

  it('a terminal operation is replayed with 201 and its stored outcome, never claimed again', async () => {
    const claim = claimOf(await api.call(claimRequest('op-replay')));
    await api.call(
      postTo('op-replay', 'outcome', { token: claim.token, outcome: 'succeeded', result: { id: 42 } }),
    );
    const replay = await api.call(claimRequest('op-replay', { lease_seconds: 300 }));
    expect(replay.status).toBe(201);
    expect(replay.headers['Idempotent-Replayed']).toBe('true');
    expect(replay.body).toMatchObject({ state: 'succeeded', replayed: true, result: { id: 42 }, attempt: 1 });
    expect(replay.body.claim).toBeUndefined();
    // The warm cache answers the same.
    const again = await api.call(claimRequest('op-replay'));
    expect(again.status).toBe(201);
    expect(again.body.result).toEqual({ id: 42 });
  });

  it('policy is fixed at reservation: later flags change neither the lease nor the attempts', async () => {
    const first = claimOf(await api.call(claimRequest('op-policy', { lease_seconds: 30, max_attempts: 2 })));
    await api.call(postTo('op-policy', 'outcome', { token: first.token, outcome: 'failed_retryable' }));
    const now = api.ledger.deps.clock();
    const second = await api.call(
      claimRequest('op-policy', { lease_seconds: 900, max_attempts: 10, requires_approval: true }),
    );
    const claim = claimOf(second);
    expect(claim.attempt).toBe(2);
    expect(claim.downstream_key).toBe(first.downstream_key);
    const expires = Date.parse(claim.lease_expires_at);
    expect(expires - now).toBeGreaterThanOrEqual(30_000);
    expect(expires - now).toBeLessThan(40_000);
    await api.call(postTo('op-policy', 'outcome', { token: claim.token, outcome: 'failed_retryable' }));
    // Two attempts were the limit fixed at reservation: the next claim closes it.
    const third = await api.call(claimRequest('op-policy', { max_attempts: 10 }));
    expect(third.status).toBe(201);
    expect(third.body).toMatchObject({
      state: 'failed_terminal',
      attempt: 2,
      replayed: false,
      error: { code: 'attempts_exhausted' },
    });
  });

  it('a tool that requires approval is reserved awaiting_approval; approved, it waits for its caller and is never enqueued', async () => {
    const res = await api.call(claimRequest('op-appr', { requires_approval: true }));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ state: 'awaiting_approval', attempt: 0, action_required: 'approval' });
    expect(res.body.claim).toBeUndefined();
    // The caller asking again before approval still gets no claim.
    expect((await api.call(claimRequest('op-appr'))).status).toBe(202);
    const approved = await api.call({
      method: 'POST',
      path: '/v1/operations/op-appr/approval',
      token: 'approver-a',
      body: { decision: 'approve', arguments_digest: res.body.arguments_digest },
    });
    expect(approved.status).toBe(200);
    expect(approved.body.state).toBe('queued');
    expect(await api.queueDepth()).toBe(0);
    // The reconciler passes over it for as long as it waits, and enqueues nothing.
    for (let pass = 0; pass < 3; pass++) {
      api.ledger.advance(10 * 60_000);
      await api.reconcile();
    }
    expect(await api.queueDepth()).toBe(0);
    expect((await api.call(readRequest('op-appr'))).body.state).toBe('queued');
    // The caller's next identical request claims it.
    const claimed = await api.call(claimRequest('op-appr'));
    const claim = claimOf(claimed);
    expect(claim.attempt).toBe(1);
    expect(claimed.body.approval).toMatchObject({ decision: 'approve' });
    const done = await api.call(postTo('op-appr', 'outcome', { token: claim.token, outcome: 'succeeded' }));
    expect(done.body.state).toBe('succeeded');
    expect(await api.queueDepth()).toBe(0);
    expect(api.trace().rejected).toEqual([]);
  });

  it('an approval that expires rejects the operation; the caller then gets the rejection replayed', async () => {
    const res = await api.call(claimRequest('op-expire', { requires_approval: true }));
    expect(res.status).toBe(202);
    api.ledger.advance(api.ledger.deps.config.approvalTtlSeconds * 1000 + 1_000);
    await api.reconcile();
    const replay = await api.call(claimRequest('op-expire'));
    expect(replay.status).toBe(201);
    expect(replay.body).toMatchObject({ state: 'rejected', error: { code: 'approval_expired' } });
    expect(await api.queueDepth()).toBe(0);
  });
});

describe('deployment restrictions on caller tool names', () => {
  it('a name the deployment executes itself is 400 tool_executed_by_ledger, and no record', async () => {
    const res = await api.call(claimRequest('op-own', { tool: LEDGER_TOOL, arguments: { target: 'a' } }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'tool_executed_by_ledger', issues: [{ path: '$.tool' }] });
    expect(await api.recordCount()).toBe(0);
    expect(api.tool.starts).toHaveLength(0);
  });

  it('with TOOL_LEDGER_CALLER_TOOLS, names outside the tenant’s entries are 403 caller_tool_not_allowed, and no record', async () => {
    const rules = parseCallerTools('crm.*,acme/pay.*:approval:max_attempts=1', 'TOOL_LEDGER_CALLER_TOOLS');
    api = await callerApi(db, fauxqs, { callerTools: rules });
    const hr = await api.call(claimRequest('op-hr', { tool: 'hr.fire' }));
    expect(hr.status).toBe(403);
    expect(hr.body).toMatchObject({ code: 'caller_tool_not_allowed', issues: [{ path: '$.tool' }] });
    // pay.* is acme's only.
    const other = await api.call(claimRequest('op-pay', { tool: 'pay.refund' }, { token: 'agent-b' }));
    expect(other.status).toBe(403);
    expect(await api.recordCount()).toBe(0);
    // crm.* is everyone's.
    expect((await api.call(claimRequest('op-crm', {}, { token: 'agent-b' }))).status).toBe(200);
  });

  it('deployment policy forces approval and caps attempts; a request can ask for more safety, never less', async () => {
    const rules = parseCallerTools('*,pay.*:approval:max_attempts=1', 'TOOL_LEDGER_CALLER_TOOLS');
    api = await callerApi(db, fauxqs, { callerTools: rules });
    const pay = await api.call(
      claimRequest('op-pay', { tool: 'pay.refund', requires_approval: false, max_attempts: 5 }),
    );
    expect(pay.status).toBe(202);
    expect(pay.body.state).toBe('awaiting_approval');
    const record = await api.ledger.store.get({ pk: 'acme#op-pay', sk: 'op' });
    expect(record).toMatchObject({ max_attempts: 1, policy: { requires_approval: true, max_attempts: 1 } });
    // Elsewhere the request's own, safer choice stands.
    const crm = await api.call(claimRequest('op-crm', { requires_approval: true, max_attempts: 2 }));
    expect(crm.status).toBe(202);
    const crmRecord = await api.ledger.store.get({ pk: 'acme#op-crm', sk: 'op' });
    expect(crmRecord).toMatchObject({ max_attempts: 2, policy: { requires_approval: true } });
  });
});

describe('bad input is 400 naming the field, and creates or changes nothing', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['lease_seconds 0', { lease_seconds: 0 }, '$.lease_seconds'],
    ['lease_seconds 901', { lease_seconds: 901 }, '$.lease_seconds'],
    ['lease_seconds 1.5', { lease_seconds: 1.5 }, '$.lease_seconds'],
    ['lease_seconds as text', { lease_seconds: '60' }, '$.lease_seconds'],
    ['max_attempts 0', { max_attempts: 0 }, '$.max_attempts'],
    ['max_attempts 11', { max_attempts: 11 }, '$.max_attempts'],
    ['requires_approval as text', { requires_approval: 'yes' }, '$.requires_approval'],
    ['downstream_idempotent as a number', { downstream_idempotent: 1 }, '$.downstream_idempotent'],
    ['a claim_id under 128 bits', { claim_id: 'short' }, '$.claim_id'],
    ['a claim_id with other characters', { claim_id: 'has spaces in it, and commas!!' }, '$.claim_id'],
    ['a claim_id over 128 characters', { claim_id: 'a'.repeat(129) }, '$.claim_id'],
    ['an unknown execution', { execution: 'somewhere' }, '$.execution'],
    ['a tool name outside the rule', { tool: 'CRM.Create' }, '$.tool'],
    ['arguments that are not an object', { arguments: [1, 2] }, '$.arguments'],
    ['an unknown field', { tenant: 'other' }, '$.tenant'],
  ];
  for (const [name, fields, path] of cases) {
    it(`a claim with ${name}`, async () => {
      const res = await api.call(claimRequest('op-bad', fields));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect((res.body.issues as { path: string }[]).map((i) => i.path)).toContain(path);
      expect(await api.recordCount()).toBe(0);
    });
  }

  for (const field of [
    'lease_seconds',
    'requires_approval',
    'downstream_idempotent',
    'max_attempts',
    'claim_id',
  ]) {
    it(`${field} on a ledger-executed call`, async () => {
      const value = {
        lease_seconds: 60,
        requires_approval: true,
        downstream_idempotent: true,
        max_attempts: 2,
        claim_id: CLAIM_ID,
      }[field];
      const res = await api.call({
        method: 'POST',
        path: '/v1/operations',
        key: 'op-ledger',
        body: { tool: LEDGER_TOOL, arguments: { target: 'a' }, [field]: value },
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: `$.${field}` }] });
      expect(await api.recordCount()).toBe(0);
      expect(api.tool.starts).toHaveLength(0);
    });
  }

  it('arguments that are not I-JSON or too deep', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const res = await api.call(claimRequest('op-deep', { arguments: deep }));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    const proto = await api.call({
      ...claimRequest('op-proto'),
      body: `{"tool":"${CALLER_TOOL}","execution":"caller","arguments":{"__proto__":{"x":1}}}`,
    });
    expect(proto.status).toBe(400);
    expect(await api.recordCount()).toBe(0);
  });

  it('the same digest as a ledger-executed call: the tool name is part of the digest', async () => {
    const res = await api.call(claimRequest('op-digest', { arguments: { target: 'a' } }));
    const ledgerDigest = (
      await api.call({
        method: 'POST',
        path: '/v1/operations',
        key: 'op-digest-ledger',
        body: { tool: LEDGER_TOOL, arguments: { target: 'a' } },
      })
    ).body.arguments_digest;
    expect(res.body.arguments_digest).toMatch(/^v1:[0-9a-f]{64}$/);
    expect(res.body.arguments_digest).not.toBe(ledgerDigest);
  });
});
