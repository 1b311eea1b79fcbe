import { describe, expect, it } from 'vitest';
import { allShards, operationKey } from '../../functions/contract/keys';
import { claimOwner } from '../../functions/domain/claim-token';
import type { OperationRecord } from '../../functions/domain/operation';
import { extendClaim } from '../../functions/engine/caller-heartbeat';
import { recordCallerOutcome } from '../../functions/engine/caller-outcome';
import { type CallerOptions, type Claim, submitCallerOperation } from '../../functions/engine/caller-submit';
import { decideCallerVerdict } from '../../functions/engine/caller-verdict';
import { reconcilePass } from '../../functions/engine/reconcile';
import { resolveOperation } from '../../functions/engine/resolution';
import { expireLease, extendLease } from '../../functions/engine/transitions';
import { handleWorkMessage } from '../../functions/queue/handle-work-message';
import { checkTrace } from '../../scripts/verify/trace-check';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

/**
 * §7's reconciler rules for operations their caller executes (the contract, §14), on dynalite: the
 * reconciler expires a caller's claim as any other, cannot ask the target, never enqueues such an
 * operation, and leaves it to its caller's verdict, to a retry with the same downstream key when the
 * caller declared the target idempotent, or to an operator.
 */

const db = useDynalite();
const TOOL = 'crm.create_contact';
const ARGS = { target: 'contact-1' };

async function ledgerFor(tools: ScriptedTool[] = []): Promise<TestLedger> {
  return testLedger(
    db.client,
    await freshTable(db.client),
    tools.map((t) => t.tool),
    { maxReconcileChecks: 3 },
  );
}

async function claim(ledger: TestLedger, id: string, options: CallerOptions = {}): Promise<Claim> {
  const out = await submitCallerOperation(ledger.deps, ledger.req(), {
    tenant: 'acme',
    principal: 'agent-1',
    operationId: id,
    tool: TOOL,
    arguments: ARGS,
    options: { leaseSeconds: 10, ...options },
  });
  if (out.kind !== 'claimed') throw new Error(`expected a claim, got ${out.kind} ${out.record.state}`);
  return out.claim;
}

function get(ledger: TestLedger, id: string): Promise<OperationRecord | undefined> {
  return ledger.store.get(operationKey('acme', id));
}

/** Every record the attention index holds, due or not. */
async function attention(ledger: TestLedger): Promise<string[]> {
  const ids: string[] = [];
  for (const shard of allShards(ledger.deps.config.attentionShards)) {
    const page = await ledger.store.queryAttention(shard, Number.MAX_SAFE_INTEGER, 100);
    ids.push(...page.items.map((r) => r.operation_id));
  }
  return ids;
}

describe('the reconciler and operations their caller executes', () => {
  it('an expired claim becomes uncertain; without a verdict it is asked about with backoff, then an operator decides', async () => {
    const ledger = await ledgerFor();
    await claim(ledger, 'c-1');
    ledger.advance(11_000);
    const first = await reconcilePass(ledger.deps, ledger.req());
    expect(first.actions).toMatchObject({ reconcile_unknown: 1 });
    expect(await get(ledger, 'c-1')).toMatchObject({ state: 'uncertain', reconcile_checks: 1 });
    // Not due again before its backoff.
    const early = await reconcilePass(ledger.deps, ledger.req());
    expect(early.read).toBe(0);
    ledger.advance(2_000);
    await reconcilePass(ledger.deps, ledger.req());
    ledger.advance(4_000);
    await reconcilePass(ledger.deps, ledger.req());
    const record = await get(ledger, 'c-1');
    expect(record).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'no_caller_verdict',
      attempt: 1,
    });
    expect(record?.attention_at).toBeUndefined();
    expect(ledger.queue.messages).toHaveLength(0);
    // The caller's verdict still lands from there.
    const { record: after } = await decideCallerVerdict(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-2',
      operationId: 'c-1',
      attempt: 1,
      verdict: 'applied',
      result: { id: 1 },
    });
    expect(after).toMatchObject({ state: 'succeeded', reconciled: true, reconciled_by: 'agent-2' });
    expect(checkTrace(ledger.logs).rejected).toEqual([]);
  });

  it('declared downstream-idempotent: the uncertain attempt goes to failed_retryable (maybe applied), not enqueued, for its caller to claim', async () => {
    const ledger = await ledgerFor();
    const first = await claim(ledger, 'c-idem', { downstreamIdempotent: true });
    ledger.advance(11_000);
    const pass = await reconcilePass(ledger.deps, ledger.req());
    expect(pass.actions).toMatchObject({ reconciled_not_applied: 1 });
    const record = await get(ledger, 'c-idem');
    expect(record).toMatchObject({
      state: 'failed_retryable',
      maybe_applied: true,
      outcome_code: 'downstream_idempotent_retry',
    });
    expect(ledger.queue.messages).toHaveLength(0);
    expect(await attention(ledger)).toEqual([]);
    const second = await claim(ledger, 'c-idem');
    expect(second).toMatchObject({ attempt: 2, downstreamKey: first.downstreamKey });
    expect(checkTrace(ledger.logs).rejected).toEqual([]);
  });

  it('failed_retryable with attempts left waits for its caller (no attention); with none left the reconciler closes it', async () => {
    const ledger = await ledgerFor();
    const one = await claim(ledger, 'c-left', { maxAttempts: 2 });
    await recordCallerOutcome(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-left',
      token: one.token,
      outcome: 'failed_retryable',
    });
    expect(await attention(ledger)).toEqual([]);
    ledger.advance(86_400_000);
    const idle = await reconcilePass(ledger.deps, ledger.req());
    expect(idle.read).toBe(0);
    const two = await claim(ledger, 'c-left');
    await recordCallerOutcome(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-left',
      token: two.token,
      outcome: 'failed_retryable',
    });
    expect(await attention(ledger)).toEqual(['c-left']);
    const pass = await reconcilePass(ledger.deps, ledger.req());
    expect(pass.actions).toMatchObject({ attempts_exhausted: 1 });
    expect(await get(ledger, 'c-left')).toMatchObject({
      state: 'failed_terminal',
      outcome_code: 'attempts_exhausted',
      attempt: 2,
    });
    expect(ledger.queue.messages).toHaveLength(0);
  });

  it('attempts used up after an attempt that may have applied: an operator decides, never a terminal failure', async () => {
    const ledger = await ledgerFor();
    await claim(ledger, 'c-maybe', { downstreamIdempotent: true, maxAttempts: 1 });
    ledger.advance(11_000);
    await reconcilePass(ledger.deps, ledger.req());
    expect(await get(ledger, 'c-maybe')).toMatchObject({ state: 'failed_retryable', maybe_applied: true });
    // The caller's next request meets no attempt left: 202, in front of an operator.
    const out = await submitCallerOperation(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-maybe',
      tool: TOOL,
      arguments: ARGS,
      options: {},
    });
    expect(out).toMatchObject({ kind: 'accepted', record: { state: 'needs_reconciliation' } });
    const record = await get(ledger, 'c-maybe');
    expect(record).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'attempts_exhausted_maybe_applied',
      error: { code: 'attempts_exhausted' },
    });
    expect(record?.expires_at).toBeUndefined();
    expect(record?.attention_at).toBeUndefined();
    expect(checkTrace(ledger.logs).rejected).toEqual([]);
  });

  it('the reconciler applies the same rule when it meets the used-up record first', async () => {
    const ledger = await ledgerFor();
    await claim(ledger, 'c-maybe-2', { downstreamIdempotent: true, maxAttempts: 1 });
    ledger.advance(11_000);
    await reconcilePass(ledger.deps, ledger.req());
    const pass = await reconcilePass(ledger.deps, ledger.req());
    expect(pass.actions).toMatchObject({ needs_reconciliation: 1 });
    expect(await get(ledger, 'c-maybe-2')).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'attempts_exhausted_maybe_applied',
    });
    expect(ledger.metrics.total('NeedsReconciliation')).toBe(1);
  });

  it('an approved operation waits for its caller: never enqueued, never due', async () => {
    const ledger = await ledgerFor();
    const out = await submitCallerOperation(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-appr',
      tool: TOOL,
      arguments: ARGS,
      options: { requiresApproval: true },
    });
    expect(out.record.state).toBe('awaiting_approval');
    const { decideApproval } = await import('../../functions/engine/approval');
    await decideApproval(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'approver-1',
      operationId: 'c-appr',
      decision: 'approve',
      argumentsDigest: out.record.arguments_digest,
    });
    expect(await attention(ledger)).toEqual([]);
    ledger.advance(86_400_000);
    await reconcilePass(ledger.deps, ledger.req());
    expect(ledger.queue.messages).toHaveLength(0);
    expect((await get(ledger, 'c-appr'))?.state).toBe('queued');
  });

  it('an operator resolves a caller’s operation as any other; not_applied waits for the caller, never enqueued', async () => {
    const ledger = await ledgerFor();
    const first = await claim(ledger, 'c-op');
    ledger.advance(11_000);
    for (let i = 0; i < 3; i++) {
      await reconcilePass(ledger.deps, ledger.req());
      ledger.advance(10_000);
    }
    expect((await get(ledger, 'c-op'))?.state).toBe('needs_reconciliation');
    const { record } = await resolveOperation(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'operator-1',
      operationId: 'c-op',
      outcome: 'not_applied',
      attempt: 1,
    });
    expect(record.state).toBe('failed_retryable');
    expect(await attention(ledger)).toEqual([]);
    await reconcilePass(ledger.deps, ledger.req());
    expect(ledger.queue.messages).toHaveLength(0);
    const second = await claim(ledger, 'c-op');
    expect(second).toMatchObject({ attempt: 2, downstreamKey: first.downstreamKey });
  });

  it('a heartbeat and the lease expiry never both land: each write is conditioned on the lease it read', async () => {
    const ledger = await ledgerFor();
    const c = await claim(ledger, 'c-race');
    const read = (await get(ledger, 'c-race')) as OperationRecord;
    // The caller's heartbeat lands first; a reconciler that read the record before it and now sees the
    // old lease as expired cannot make it uncertain.
    ledger.advance(5_000);
    await extendClaim(ledger.deps, ledger.req(), {
      tenant: 'acme',
      operationId: 'c-race',
      token: c.token,
      leaseSeconds: 60,
    });
    ledger.advance(6_000);
    const expired = await expireLease(ledger.deps, ledger.req(), read, undefined);
    expect(expired.ok).toBe(false);
    expect((await get(ledger, 'c-race'))?.state).toBe('pending');
    // The other way round: a heartbeat sent on a record read while live fails once the lease has run
    // out, even if nobody has moved the record yet.
    const live = (await get(ledger, 'c-race')) as OperationRecord;
    ledger.advance(61_000);
    const late = await extendLease(ledger.deps, ledger.req(), live, {
      owner: claimOwner(c.token),
      expiresAt: ledger.deps.clock() + 60_000,
    });
    expect(late.ok).toBe(false);
    expect((await get(ledger, 'c-race'))?.lease_expires_at).toBe(live.lease_expires_at);
  });

  it('the ledger never claims or runs a caller’s operation, even once the deployment registers a tool of that name', async () => {
    const ledger = await ledgerFor();
    const c = await claim(ledger, 'c-name');
    await recordCallerOutcome(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-name',
      token: c.token,
      outcome: 'failed_retryable',
    });
    const sameName = new ScriptedTool(TOOL);
    const later = testLedger(db.client, ledger.deps.config.tableName, [sameName.tool]);
    // The same arguments through the ledger's own path: the digest is the same (tool + arguments).
    const sync = await later.submit({ operationId: 'c-name', tool: TOOL, arguments: ARGS });
    expect(sync).toMatchObject({ kind: 'accepted', record: { state: 'failed_retryable', attempt: 1 } });
    const message = JSON.stringify({ operation_id: 'c-name', tenant: 'acme', tool: TOOL, arguments: ARGS });
    await handleWorkMessage(later.deps, later.req(), message, new Set(['acme']));
    expect(sameName.starts).toHaveLength(0);
    expect(await get(ledger, 'c-name')).toMatchObject({ state: 'failed_retryable', attempt: 1 });
  });

  it('one outcome posted twice at the same instant is one transition: one line, one answer for both', async () => {
    const ledger = await ledgerFor();
    const one = await claim(ledger, 'c-twice');
    const post = () =>
      recordCallerOutcome(ledger.deps, ledger.req(), {
        tenant: 'acme',
        principal: 'agent-1',
        operationId: 'c-twice',
        token: one.token,
        outcome: 'uncertain',
      });
    const [a, b] = await Promise.all([post(), post()]);
    expect(a).toMatchObject({ state: 'uncertain', attempt: 1 });
    expect(b).toMatchObject({ state: 'uncertain', attempt: 1 });
    const moves = ledger.logs.filter((l) => l.operation_id === 'c-twice' && l.state_after === 'uncertain');
    expect(moves.map((l) => `${l.state_before}->${l.state_after}`)).toEqual(['pending->uncertain']);
    expect(checkTrace(ledger.logs).rejected).toEqual([]);
  });

  it('a claim of the next attempt sent twice at the same instant (one claim_id) is one transition: one line, one claim', async () => {
    const ledger = await ledgerFor();
    const one = await claim(ledger, 'c-claim-twice', { maxAttempts: 3 });
    await recordCallerOutcome(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'c-claim-twice',
      token: one.token,
      outcome: 'failed_retryable',
    });
    const [a, b] = await Promise.all([
      claim(ledger, 'c-claim-twice', { claimId: 'retry-1' }),
      claim(ledger, 'c-claim-twice', { claimId: 'retry-1' }),
    ]);
    expect(a).toMatchObject({ attempt: 2 });
    expect(b.token).toBe(a.token);
    const claims = ledger.logs.filter(
      (l) => l.operation_id === 'c-claim-twice' && l.state_after === 'pending',
    );
    expect(claims.map((l) => `${l.state_before}->pending@${l.attempt_number}`)).toEqual([
      'null->pending@1',
      'failed_retryable->pending@2',
    ]);
    expect(checkTrace(ledger.logs).rejected).toEqual([]);
  });
});
