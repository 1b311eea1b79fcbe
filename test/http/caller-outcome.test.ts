import { beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_METRICS } from '../../functions/contract/metrics';
import { claimOwner, newClaimToken } from '../../functions/domain/claim-token';
import { useDynalite } from '../support/dynalite';
import {
  type CallerApi,
  callerApi,
  claimOf,
  claimRequest,
  postTo,
  readRequest,
  useFauxqs,
} from './caller-support';
import { captureOutput } from './support';

/**
 * The heartbeat, the outcome and the verdict of operations their caller executes, at the HTTP level
 * through the API handler, on dynalite and fauxqs started here, with the reconciler run between steps.
 */

const db = useDynalite();
const fauxqs = useFauxqs();
let api: CallerApi;

beforeEach(async () => {
  api = await callerApi(db, fauxqs);
});

/** The record as stored. */
function stored(key: string) {
  return api.ledger.store.get({ pk: `acme#${key}`, sk: 'op' });
}

/** Claims `key` and lets its lease run out: the reconciler makes the attempt uncertain. */
async function crashAfterClaim(key: string, fields: Record<string, unknown> = {}) {
  const claim = claimOf(await api.call(claimRequest(key, { lease_seconds: 10, ...fields })));
  api.ledger.advance(11_000);
  await api.reconcile();
  return claim;
}

describe('the outcome of a caller’s attempt', () => {
  it('lands with the claim’s token; the same outcome again is 200 with the same body; another is 409', async () => {
    const claim = claimOf(await api.call(claimRequest('op-1')));
    const body = { token: claim.token, outcome: 'succeeded', result: { contact: 'c-1' } };
    const first = await api.call(postTo('op-1', 'outcome', body));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      state: 'succeeded',
      attempt: 1,
      result: { contact: 'c-1' },
      error: null,
    });
    const again = await api.call(postTo('op-1', 'outcome', body));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const other = await api.call(
      postTo('op-1', 'outcome', { token: claim.token, outcome: 'failed_terminal' }),
    );
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'state_changed', operation: { state: 'succeeded' } });
    const otherResult = await api.call(postTo('op-1', 'outcome', { ...body, result: { contact: 'c-2' } }));
    expect(otherResult.status).toBe(409);
    expect((await stored('op-1'))?.result).toBe('{"contact":"c-1"}');
    expect(api.ledger.metrics.total(LEDGER_METRICS.firstExecutions)).toBe(1);
    expect(api.trace().rejected).toEqual([]);
  });

  it('a result of 90 KB of JSON is recorded whole; the same outcome again gets the same body', async () => {
    const claim = claimOf(await api.call(claimRequest('op-big')));
    const rows = Array.from({ length: 2_100 }, (_, i) => ({
      line: i,
      text: `step ${i % 17} passed in ${i % 7} ms`,
    }));
    const result = { log: rows };
    const json = JSON.stringify(result);
    expect(json.length).toBeGreaterThan(64 * 1024);
    const body = { token: claim.token, outcome: 'succeeded', result };
    const first = await api.call(postTo('op-big', 'outcome', body));
    expect(first.status).toBe(200);
    expect(first.body.result).toEqual(result);
    expect((await stored('op-big'))?.result).toBe(json);
    const again = await api.call(postTo('op-big', 'outcome', body));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('a failure is stored with the caller’s code and message; the log line carries the code, never the message', async () => {
    const claim = claimOf(await api.call(claimRequest('op-fail')));
    const { result: res, lines } = await captureOutput(() =>
      api.call(
        postTo('op-fail', 'outcome', {
          token: claim.token,
          outcome: 'failed_terminal',
          error: { code: 'card_declined', message: 'message-canary-1234' },
        }),
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      state: 'failed_terminal',
      error: { code: 'card_declined', message: 'message-canary-1234' },
    });
    const line = api.ledger.logs.at(-1);
    expect(line).toMatchObject({
      state_before: 'pending',
      state_after: 'failed_terminal',
      outcome_code: 'caller.card_declined',
    });
    expect(JSON.stringify(api.ledger.logs)).not.toContain('message-canary-1234');
    expect(lines.join('')).not.toContain('message-canary-1234');
    expect(lines.join('')).not.toContain(claim.token);
  });

  it('an uncertain outcome waits for a verdict; failed_retryable waits for its caller, never enqueued', async () => {
    const claim = claimOf(await api.call(claimRequest('op-retry')));
    const res = await api.call(
      postTo('op-retry', 'outcome', { token: claim.token, outcome: 'failed_retryable' }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'failed_retryable', error: { code: 'failed_retryable' } });
    const record = await stored('op-retry');
    expect(record?.attention_at).toBeUndefined();
    expect(record?.unresolved_tenant).toBeDefined();
    api.ledger.advance(3_600_000);
    await api.reconcile();
    expect(await api.queueDepth()).toBe(0);
    const next = claimOf(await api.call(claimRequest('op-retry')));
    expect(next.attempt).toBe(2);
    expect(next.downstream_key).toBe(claim.downstream_key);
  });

  it('a token that is not the claim’s changes nothing (409), and a malformed one is 400', async () => {
    const claim = claimOf(await api.call(claimRequest('op-token')));
    const forged = newClaimToken(1, 'a-guessed-reservation');
    const res = await api.call(postTo('op-token', 'outcome', { token: forged, outcome: 'succeeded' }));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'state_changed', operation: { state: 'pending' } });
    expect(JSON.stringify(res.body)).not.toContain(claim.token);
    for (const token of ['tlc1.1.short', 'not-a-token', `tlc1.0.${'a'.repeat(43)}`]) {
      const bad = await api.call(postTo('op-token', 'outcome', { token, outcome: 'succeeded' }));
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: 'validation_failed', issues: [{ path: '$.token' }] });
    }
    const record = await stored('op-token');
    expect(record).toMatchObject({ state: 'pending', lease_owner: claimOwner(claim.token) });
    expect(record?.late_outcome).toBeUndefined();
  });

  it('another tenant sees no such operation (404), even with the right token', async () => {
    const claim = claimOf(await api.call(claimRequest('op-tenant')));
    for (const request of [
      postTo('op-tenant', 'outcome', { token: claim.token, outcome: 'succeeded' }, { token: 'agent-b' }),
      postTo('op-tenant', 'lease', { token: claim.token }, { token: 'agent-b' }),
      postTo('op-tenant', 'reconciliation', { attempt: 1, verdict: 'applied' }, { token: 'agent-b' }),
      readRequest('op-tenant', 'agent-b'),
    ]) {
      const res = await api.call(request);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await stored('op-tenant'))?.state).toBe('pending');
    // Their own operation of the same ID is theirs alone.
    const theirs = await api.call(claimRequest('op-tenant', {}, { token: 'agent-b' }));
    expect(claimOf(theirs).downstream_key).not.toBe(claim.downstream_key);
  });

  it('only agents post outcomes, heartbeats and verdicts: approvers and operators get 403', async () => {
    const claim = claimOf(await api.call(claimRequest('op-roles')));
    for (const token of ['approver-a', 'operator-a']) {
      const res = await api.call(
        postTo('op-roles', 'outcome', { token: claim.token, outcome: 'succeeded' }, { token }),
      );
      expect(res.status).toBe(403);
    }
    expect((await stored('op-roles'))?.state).toBe('pending');
  });

  it('bad outcome bodies are 400 naming the field and change nothing', async () => {
    const claim = claimOf(await api.call(claimRequest('op-body')));
    const cases: [Record<string, unknown>, string][] = [
      [{ outcome: 'done' }, '$.outcome'],
      [{ outcome: 'failed_terminal', result: { x: 1 } }, '$.result'],
      [{ outcome: 'succeeded', error: { code: 'x' } }, '$.error'],
      [{ outcome: 'failed_terminal', error: { code: 'Bad Code' } }, '$.error.code'],
      [{ outcome: 'failed_terminal', error: { code: 'x'.repeat(65) } }, '$.error.code'],
      [{ outcome: 'failed_terminal', error: { code: 'x', message: 'm'.repeat(1025) } }, '$.error.message'],
      [{ outcome: 'failed_terminal', error: { code: 'x', extra: 1 } }, '$.error.extra'],
      [{ outcome: 'succeeded', tenant: 'other' }, '$.tenant'],
    ];
    for (const [fields, path] of cases) {
      const res = await api.call(postTo('op-body', 'outcome', { token: claim.token, ...fields }));
      expect(res.status, JSON.stringify(fields).slice(0, 80)).toBe(400);
      expect((res.body.issues as { path: string }[]).map((i) => i.path)).toContain(path);
    }
    const missing = await api.call(postTo('op-body', 'outcome', { outcome: 'succeeded' }));
    expect(missing.status).toBe(400);
    expect((await stored('op-body'))?.state).toBe('pending');
  });
});

describe('the heartbeat', () => {
  it('extends a live claim from now, by its own lease_seconds or the record’s', async () => {
    const claim = claimOf(await api.call(claimRequest('op-hb', { lease_seconds: 20 })));
    api.ledger.advance(15_000);
    const now = api.ledger.deps.clock();
    const beat = await api.call(postTo('op-hb', 'lease', { token: claim.token }));
    expect(beat.status).toBe(200);
    expect(beat.body).toMatchObject({ state: 'pending', attempt: 1 });
    const extended = beat.body.claim as Record<string, unknown>;
    expect(extended).toEqual({
      attempt: 1,
      lease_expires_at: expect.any(String),
      downstream_key: claim.downstream_key,
    });
    expect(Date.parse(extended.lease_expires_at as string) - now).toBeGreaterThanOrEqual(20_000);
    expect(Date.parse(extended.lease_expires_at as string) - now).toBeLessThan(25_000);
    expect(JSON.stringify(beat.body)).not.toContain(claim.token);
    // Past the first lease's end, the reconciler leaves the extended claim alone.
    api.ledger.advance(10_000);
    await api.reconcile();
    expect((await stored('op-hb'))?.state).toBe('pending');
    const longer = await api.call(postTo('op-hb', 'lease', { token: claim.token, lease_seconds: 600 }));
    const until = Date.parse((longer.body.claim as Record<string, string>).lease_expires_at as string);
    expect(until - api.ledger.deps.clock()).toBeGreaterThanOrEqual(600_000 - 1_000);
    expect((await stored('op-hb'))?.lease_expires_at).toBe(until);
  });

  it('an expired claim, another token or a finished attempt is 409 state_changed: the claim is lost', async () => {
    const claim = claimOf(await api.call(claimRequest('op-lost', { lease_seconds: 5 })));
    const wrong = await api.call(postTo('op-lost', 'lease', { token: newClaimToken(1, 'x') }));
    expect(wrong.status).toBe(409);
    expect(wrong.body).toMatchObject({ code: 'state_changed', operation: { state: 'pending' } });
    api.ledger.advance(6_000);
    const expired = await api.call(postTo('op-lost', 'lease', { token: claim.token }));
    expect(expired.status).toBe(409);
    // Never revived: the stored lease is the one that ran out.
    expect((await stored('op-lost'))?.lease_expires_at).toBe(Date.parse(claim.lease_expires_at));
    const fresh = claimOf(await api.call(claimRequest('op-done')));
    await api.call(postTo('op-done', 'outcome', { token: fresh.token, outcome: 'succeeded' }));
    const done = await api.call(postTo('op-done', 'lease', { token: fresh.token }));
    expect(done.status).toBe(409);
    expect(done.body).toMatchObject({ operation: { state: 'succeeded' } });
  });

  it('bad heartbeat bodies are 400 naming the field', async () => {
    const claim = claimOf(await api.call(claimRequest('op-hbbad')));
    for (const [body, path] of [
      [{ token: claim.token, lease_seconds: 0 }, '$.lease_seconds'],
      [{ token: claim.token, lease_seconds: 901 }, '$.lease_seconds'],
      [{ token: 42 }, '$.token'],
      [{}, '$.token'],
      [{ token: claim.token, extra: true }, '$.extra'],
    ] as const) {
      const res = await api.call(postTo('op-hbbad', 'lease', body));
      expect(res.status).toBe(400);
      expect((res.body.issues as { path: string }[]).map((i) => i.path)).toContain(path);
    }
    expect((await stored('op-hbbad'))?.lease_expires_at).toBe(Date.parse(claim.lease_expires_at));
  });
});

describe('a caller that crashes or loses its answer', () => {
  it('an expired claim becomes uncertain; the same attempt’s known outcome still lands (late outcome)', async () => {
    const claim = await crashAfterClaim('op-late');
    expect((await stored('op-late'))?.state).toBe('uncertain');
    const unknown = await api.call(
      postTo('op-late', 'outcome', { token: claim.token, outcome: 'uncertain' }),
    );
    expect(unknown.status).toBe(409);
    expect(unknown.body).toMatchObject({ operation: { state: 'uncertain' } });
    const late = await api.call(
      postTo('op-late', 'outcome', { token: claim.token, outcome: 'succeeded', result: 7 }),
    );
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ state: 'succeeded', attempt: 1, result: 7 });
    const line = api.ledger.logs.at(-1);
    expect(line).toMatchObject({
      state_before: 'uncertain',
      state_after: 'succeeded',
      outcome_code: 'succeeded',
    });
    expect(api.trace().rejected).toEqual([]);
  });

  it('crash → uncertain → verdict applied: succeeded, reconciled by the agent, replayed after', async () => {
    const claim = await crashAfterClaim('op-applied');
    const verdict = await api.call(
      postTo('op-applied', 'reconciliation', {
        attempt: 1,
        verdict: 'applied',
        result: { found: true },
        downstream_key: claim.downstream_key,
      }),
    );
    expect(verdict.status).toBe(200);
    expect(verdict.body).toMatchObject({
      state: 'succeeded',
      attempt: 1,
      reconciled: true,
      reconciled_by: expect.stringMatching(/^token:/),
      result: { found: true },
      error: null,
    });
    const again = await api.call(
      postTo('op-applied', 'reconciliation', { attempt: 1, verdict: 'applied', result: { found: true } }),
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual(verdict.body);
    const opposite = await api.call(
      postTo('op-applied', 'reconciliation', { attempt: 1, verdict: 'not_applied' }),
    );
    expect(opposite.status).toBe(409);
    const replay = await api.call(claimRequest('op-applied', { lease_seconds: 10 }));
    expect(replay.status).toBe(201);
    expect(replay.body).toMatchObject({ state: 'succeeded', replayed: true, result: { found: true } });
    // Another agent of the tenant may post it: any agent holding the downstream key can check the target.
    expect(api.trace().rejected).toEqual([]);
  });

  it('crash → uncertain → verdict not_applied → the next attempt, with the same downstream key, never enqueued', async () => {
    const claim = await crashAfterClaim('op-again');
    const verdict = await api.call(
      postTo(
        'op-again',
        'reconciliation',
        { attempt: 1, verdict: 'not_applied', downstream_key: claim.downstream_key },
        { token: 'all-a' },
      ),
    );
    expect(verdict.status).toBe(200);
    expect(verdict.body).toMatchObject({ state: 'failed_retryable', attempt: 1, reconciled: true });
    api.ledger.advance(600_000);
    await api.reconcile();
    expect(await api.queueDepth()).toBe(0);
    const next = claimOf(await api.call(claimRequest('op-again', { lease_seconds: 10 })));
    expect(next).toMatchObject({ attempt: 2, downstream_key: claim.downstream_key });
    expect(next.token).not.toBe(claim.token);
    // The verdict retried after the next attempt started is refused: it never starts a third one.
    const stale = await api.call(
      postTo('op-again', 'reconciliation', { attempt: 1, verdict: 'not_applied' }),
    );
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ operation: { state: 'pending', attempt: 2 } });
    const done = await api.call(postTo('op-again', 'outcome', { token: next.token, outcome: 'succeeded' }));
    expect(done.body).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(await api.queueDepth()).toBe(0);
    expect(api.trace().rejected).toEqual([]);
  });

  it('the outcome of a superseded attempt is kept as late_outcome with 409, and changes nothing else', async () => {
    const first = await crashAfterClaim('op-super');
    await api.call(postTo('op-super', 'reconciliation', { attempt: 1, verdict: 'not_applied' }));
    const second = claimOf(await api.call(claimRequest('op-super')));
    const late = await api.call(
      postTo('op-super', 'outcome', { token: first.token, outcome: 'succeeded', result: 1 }),
    );
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({
      code: 'state_changed',
      operation: { state: 'pending', attempt: 2, late_outcome: { attempt: 1, state: 'succeeded' } },
    });
    expect(api.ledger.metrics.total(LEDGER_METRICS.lateOutcomes)).toBe(1);
    // Posted again after a lost answer: kept and counted once.
    expect(
      (await api.call(postTo('op-super', 'outcome', { token: first.token, outcome: 'succeeded', result: 1 })))
        .status,
    ).toBe(409);
    expect(api.ledger.metrics.total(LEDGER_METRICS.lateOutcomes)).toBe(1);
    // A forged token for the superseded attempt is not authentic: no annotation.
    const forged = await api.call(
      postTo('op-super', 'outcome', { token: newClaimToken(1, 'guess'), outcome: 'failed_terminal' }),
    );
    expect(forged.status).toBe(409);
    const record = await stored('op-super');
    expect(record).toMatchObject({ state: 'pending', attempt: 2, lease_owner: claimOwner(second.token) });
    expect(record?.late_outcome).toMatchObject({ attempt: 1, state: 'succeeded' });
    expect(record?.superseded_claims).toEqual([claimOwner(first.token)]);
    // The current attempt's outcome still lands.
    const done = await api.call(
      postTo('op-super', 'outcome', { token: second.token, outcome: 'succeeded', result: 2 }),
    );
    expect(done.body).toMatchObject({
      state: 'succeeded',
      attempt: 2,
      result: 2,
      late_outcome: { attempt: 1 },
    });
    expect(api.trace().rejected).toEqual([]);
  });

  it('a verdict names the attempt and reservation it checked: another attempt, another key, or a ledger operation is 409', async () => {
    const claim = await crashAfterClaim('op-verdict');
    const wrongAttempt = await api.call(
      postTo('op-verdict', 'reconciliation', { attempt: 2, verdict: 'applied' }),
    );
    expect(wrongAttempt.status).toBe(409);
    const wrongKey = await api.call(
      postTo('op-verdict', 'reconciliation', {
        attempt: 1,
        verdict: 'applied',
        downstream_key: `tl2_${'x'.repeat(43)}`,
      }),
    );
    expect(wrongKey.status).toBe(409);
    expect((await stored('op-verdict'))?.state).toBe('uncertain');
    const pending = claimOf(await api.call(claimRequest('op-pending')));
    const early = await api.call(
      postTo('op-pending', 'reconciliation', { attempt: pending.attempt, verdict: 'applied' }),
    );
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ operation: { state: 'pending' } });
    api.tool.next({ kind: 'uncertain', code: 'timeout', applied: false });
    const ledgerOp = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'op-ledger',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    expect(ledgerOp.body.state).toBe('uncertain');
    const onLedger = await api.call(
      postTo('op-ledger', 'reconciliation', { attempt: 1, verdict: 'applied' }),
    );
    expect(onLedger.status).toBe(409);
    expect((await api.call(readRequest('op-ledger'))).body.state).toBe('uncertain');
    expect(claim.attempt).toBe(1);
  });

  it('bad verdict bodies are 400 naming the field and change nothing', async () => {
    await crashAfterClaim('op-vbad');
    for (const [body, path] of [
      [{ attempt: 0, verdict: 'applied' }, '$.attempt'],
      [{ attempt: 1.5, verdict: 'applied' }, '$.attempt'],
      [{ verdict: 'applied' }, '$.attempt'],
      [{ attempt: 1, verdict: 'maybe' }, '$.verdict'],
      [{ attempt: 1, verdict: 'not_applied', result: {} }, '$.result'],
      [{ attempt: 1, verdict: 'applied', by: 'someone' }, '$.by'],
    ] as const) {
      const res = await api.call(postTo('op-vbad', 'reconciliation', body));
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect((res.body.issues as { path: string }[]).map((i) => i.path)).toContain(path);
    }
    expect((await stored('op-vbad'))?.state).toBe('uncertain');
  });
});
