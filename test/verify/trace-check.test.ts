import { describe, expect, it } from 'vitest';
import { TRANSITIONS } from '../../functions/domain/states';
import { checkTrace, movesOf, type TraceLine, writersOf } from '../../scripts/verify/trace-check';

function line(
  before: string | null,
  after: string,
  attempt: number,
  code: string | null = null,
  id = 'op-1',
): TraceLine {
  return {
    operation_id: id,
    state_before: before,
    state_after: after,
    attempt_number: attempt,
    outcome_code: code,
  };
}

describe('the trace checker replays transition lines against the model', () => {
  it('accepts a legal history: reserve, uncertain, lease expiry, reconcile, retry, success, replay', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'reconciled_not_applied'),
      line('failed_retryable', 'pending', 2),
      line('pending', 'succeeded', 2, 'succeeded'),
      line('succeeded', 'succeeded', 2, 'replayed'),
    ]);
    expect(verdict.rejected).toEqual([]);
    expect(verdict.transitions).toBe(5);
    expect(verdict.observations).toBe(1);
  });

  it('accepts a late commit of the same attempt after its lease expired, and lines logged out of order', () => {
    const verdict = checkTrace([
      line(null, 'queued', 0),
      // the claim's line reaches the log after the reconciler's, whose write came later
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('queued', 'pending', 1),
      line('pending', 'succeeded', 1, 'succeeded'),
    ]);
    expect(verdict.rejected).toEqual([]);
  });

  it('accepts a reconciler line logged after the late commit its write let land (the commit names the state it met)', () => {
    // The reconciler's write landed first; it paused before logging while the stalled owner committed
    // from uncertain and logged. The commit also fits `pending` (its condition allows it): taken first
    // it would strand the reconciler's line.
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('uncertain', 'succeeded', 1, 'succeeded'),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('succeeded', 'succeeded', 1, 'replayed'),
    ]);
    expect(verdict.rejected).toEqual([]);
    expect(verdict.transitions).toBe(3);
  });

  it('rejects a forged change of a terminal record', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'succeeded', 1, 'succeeded'),
      line('succeeded', 'pending', 2),
    ]);
    expect(verdict.rejected).toHaveLength(1);
    expect(verdict.rejected[0]?.line.state_before).toBe('succeeded');
  });

  it('rejects a claim that does not raise the attempt by one', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'failed_retryable', 1, 'connect_failed'),
      line('failed_retryable', 'pending', 1),
    ]);
    expect(verdict.rejected.map((r) => r.reason).join()).toMatch(/does not follow/);
  });

  it('rejects a move its writer may not make: the reconciler failing an uncertain operation terminally', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'timeout'),
      line('uncertain', 'failed_terminal', 1, 'reconciled_not_applied'),
    ]);
    expect(verdict.rejected).toHaveLength(1);
    expect(verdict.rejected[0]?.reason).toMatch(/no transition of reconciler/);
  });

  it('rejects a retry of a tool that can neither reconcile nor dedupe: its decision goes to an operator', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'no_reconcile'),
    ]);
    expect(verdict.rejected).toHaveLength(1);
    expect(verdict.rejected[0]?.reason).toMatch(/no_reconcile never ends in failed_retryable/);
    const legal = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'needs_reconciliation', 1, 'no_reconcile'),
    ]);
    expect(legal.rejected).toEqual([]);
  });

  it('rejects a second effect-bearing claim of the same attempt', () => {
    const verdict = checkTrace([
      line(null, 'queued', 0),
      line('queued', 'pending', 1),
      line('queued', 'pending', 1),
    ]);
    expect(verdict.rejected).toHaveLength(1);
  });

  it('accepts an attempts_exhausted line from the reconciler or a worker, as the table says both close a used-up record', () => {
    expect(writersOf('attempts_exhausted')).toEqual(TRANSITIONS.exhaust_attempts.actors);
    expect(TRANSITIONS.exhaust_attempts.actors).toEqual(['worker', 'reconciler']);
    expect(movesOf('attempts_exhausted')).toEqual(['exhaust_attempts']);
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'reconciled_not_applied'),
      line('failed_retryable', 'failed_terminal', 1, 'attempts_exhausted'),
    ]);
    expect(verdict.rejected).toEqual([]);
  });

  it('rejects an exhaustion whose line names no outcome code (the old rule took it for a worker’s)', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'failed_retryable', 1, 'connect_failed'),
      line('failed_retryable', 'failed_terminal', 1),
    ]);
    expect(verdict.rejected).toHaveLength(1);
    expect(verdict.rejected[0]?.reason).toMatch(
      /with no outcome code moves failed_retryable -> failed_terminal/,
    );
  });

  it('reads the lines of an operation its caller executes: claims, a caller’s outcome codes, verdicts, the missing verdict', () => {
    expect(writersOf('verdict_applied')).toEqual(['caller']);
    expect(movesOf('verdict_not_applied')).toEqual(['caller_verdict']);
    expect(writersOf('caller.card_declined')).toEqual(['owner', 'late_owner']);
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'caller.timeout'),
      line('uncertain', 'failed_retryable', 1, 'verdict_not_applied'),
      line('failed_retryable', 'pending', 2),
      line('pending', 'uncertain', 2, 'lease_expired'),
      line('uncertain', 'needs_reconciliation', 2, 'no_caller_verdict'),
      line('needs_reconciliation', 'succeeded', 2, 'verdict_applied'),
    ]);
    expect(verdict.rejected).toEqual([]);
    const maybe = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'downstream_idempotent_retry'),
      line('failed_retryable', 'needs_reconciliation', 1, 'attempts_exhausted_maybe_applied'),
    ]);
    expect(maybe.rejected).toEqual([]);
    const wrongEnd = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'failed_retryable', 1, 'caller.x'),
      line('failed_retryable', 'needs_reconciliation', 1, 'attempts_exhausted'),
    ]);
    expect(wrongEnd.rejected).toHaveLength(1);
  });

  it('reads a caller’s lost answers: a claim returned for its claim_id, its outcome landing after the lease expired, a superseded claim’s late outcome', () => {
    const verdict = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'pending', 1, 'claim_returned'),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'succeeded', 1, 'succeeded'),
    ]);
    expect(verdict.rejected).toEqual([]);
    expect(verdict.observations).toBe(1);
    const superseded = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'verdict_not_applied'),
      line('failed_retryable', 'pending', 2),
      line('pending', 'pending', 2, 'late_outcome:uncertain'),
      line('pending', 'succeeded', 2, 'succeeded'),
    ]);
    expect(superseded.rejected).toEqual([]);
    // A caller's verdict is never the outcome of an attempt: a late outcome naming a state no outcome ends in is rejected.
    const forged = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'pending', 1, 'late_outcome:queued'),
    ]);
    expect(forged.rejected).toHaveLength(1);
  });

  it('rejects a caller’s verdict that fails an operation terminally, or lands on a pending one', () => {
    const terminal = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_terminal', 1, 'verdict_not_applied'),
    ]);
    expect(terminal.rejected).toHaveLength(1);
    expect(terminal.rejected[0]?.reason).toMatch(/no transition of caller/);
    const early = checkTrace([line(null, 'pending', 1), line('pending', 'succeeded', 1, 'verdict_applied')]);
    expect(early.rejected).toHaveLength(1);
    const escalated = checkTrace([
      line(null, 'pending', 1),
      line('pending', 'uncertain', 1, 'lease_expired'),
      line('uncertain', 'failed_retryable', 1, 'no_caller_verdict'),
    ]);
    expect(escalated.rejected[0]?.reason).toMatch(/no_caller_verdict never ends in failed_retryable/);
  });

  it('accepts a worker handing a queued or failed_retryable operation to an operator because its tool’s policy changed', () => {
    expect(writersOf('policy_changed')).toEqual(['worker']);
    expect(movesOf('policy_changed')).toEqual(['hold_for_operator']);
    const verdict = checkTrace([
      line(null, 'queued', 0),
      line('queued', 'needs_reconciliation', 0, 'policy_changed'),
      line('needs_reconciliation', 'failed_retryable', 0, 'resolved_not_applied'),
      line('failed_retryable', 'needs_reconciliation', 0, 'policy_changed'),
      line('needs_reconciliation', 'failed_terminal', 0, 'resolved_failed'),
    ]);
    expect(verdict.rejected).toEqual([]);
  });

  it('rejects policy_changed anywhere but before a claim: from pending, or ending elsewhere than with an operator', () => {
    for (const forged of [
      [line(null, 'pending', 1), line('pending', 'needs_reconciliation', 1, 'policy_changed')],
      [line(null, 'queued', 0), line('queued', 'failed_terminal', 0, 'policy_changed')],
      [line(null, 'queued', 0), line('queued', 'needs_reconciliation', 1, 'policy_changed')],
    ]) {
      expect(checkTrace(forged).rejected).toHaveLength(1);
    }
  });

  it('keeps operations apart by trace key', () => {
    const a = { ...line(null, 'pending', 1), trace_key: 't#a#op-1' };
    const b = { ...line(null, 'pending', 1), trace_key: 't#b#op-1' };
    expect(checkTrace([a, b]).rejected).toEqual([]);
    expect(checkTrace([line(null, 'pending', 1), line(null, 'pending', 1)]).rejected).toHaveLength(1);
  });

  it('keeps two tenants’ operations with one operation ID apart by the tenant on each line', () => {
    const a = { ...line(null, 'pending', 1), tenant: 'acme' };
    const b = { ...line(null, 'pending', 1), tenant: 'globex' };
    expect(checkTrace([a, b]).rejected).toEqual([]);
    expect(checkTrace([a, { ...a }]).rejected).toHaveLength(1);
  });
});

describe('moves missing from the log are bounded by the writes the run lost', () => {
  // The old rule bridged up to 4 unlogged moves of any operation, whatever the run had done.
  const secondAttemptWithoutFirstEnd = [
    line(null, 'pending', 1),
    // nothing says how attempt 1 ended
    line('failed_retryable', 'pending', 2),
    line('pending', 'succeeded', 2, 'succeeded'),
  ];

  it('rejects a second attempt with no line saying why the first ended, when no write of the run went unseen', () => {
    const verdict = checkTrace(secondAttemptWithoutFirstEnd);
    expect(verdict.rejected).toHaveLength(2);
    expect(verdict.rejected[0]?.line.state_before).toBe('failed_retryable');
    expect(verdict.rejected[0]?.reason).toMatch(
      /1 move\(s\) missing from the log would bridge it, but the run allows 0/,
    );
    expect(verdict.unlogged).toBe(0);
  });

  it('accepts the same history when the run says one write of that operation landed unseen by its writer', () => {
    const verdict = checkTrace(secondAttemptWithoutFirstEnd, { unlogged: (key) => (key === 'op-1' ? 1 : 0) });
    expect(verdict.rejected).toEqual([]);
    expect(verdict.unlogged).toBe(1);
    expect(verdict.allowed).toBe(1);
  });

  it('rejects a gap longer than the writes lost: three missing moves where one crash was injected', () => {
    const verdict = checkTrace(
      [
        line(null, 'pending', 1),
        // missing: pending -> failed_retryable @1, claim @2, pending -> failed_retryable @2
        line('failed_retryable', 'pending', 3),
      ],
      { unlogged: () => 1 },
    );
    expect(verdict.rejected).toHaveLength(1);
    expect(verdict.rejected[0]?.reason).toMatch(/3 move\(s\) missing/);
  });

  it('spends the allowance once: two gaps of one move each need two lost writes', () => {
    const history = [
      line(null, 'pending', 1),
      line('failed_retryable', 'pending', 2),
      line('failed_retryable', 'pending', 3),
    ];
    expect(checkTrace(history, { unlogged: () => 1 }).rejected).toHaveLength(1);
    expect(checkTrace(history, { unlogged: () => 2 }).rejected).toEqual([]);
  });

  it('does not lend one operation’s lost writes to another', () => {
    const a = (l: TraceLine) => ({ ...l, trace_key: 'a' });
    const b = (l: TraceLine) => ({ ...l, trace_key: 'b', operation_id: 'op-2' });
    const verdict = checkTrace(
      [...secondAttemptWithoutFirstEnd.map(a), ...secondAttemptWithoutFirstEnd.map(b)],
      {
        unlogged: (key) => (key === 'a' ? 1 : 0),
      },
    );
    expect(verdict.rejected.map((r) => r.key)).toEqual(['b', 'b']);
  });

  it('never bridges out of a terminal state, whatever the allowance', () => {
    const verdict = checkTrace(
      [
        line(null, 'pending', 1),
        line('pending', 'succeeded', 1, 'succeeded'),
        line('failed_retryable', 'pending', 2),
      ],
      { unlogged: () => 4 },
    );
    expect(verdict.rejected).toHaveLength(1);
  });
});
