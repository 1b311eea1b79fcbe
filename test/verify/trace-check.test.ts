import { describe, expect, it } from 'vitest';
import { checkTrace, type TraceLine } from '../../scripts/verify/trace-check';

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

  it('keeps operations apart by trace key', () => {
    const a = { ...line(null, 'pending', 1), trace_key: 't#a#op-1' };
    const b = { ...line(null, 'pending', 1), trace_key: 't#b#op-1' };
    expect(checkTrace([a, b]).rejected).toEqual([]);
    expect(checkTrace([line(null, 'pending', 1), line(null, 'pending', 1)]).rejected).toHaveLength(1);
  });
});
