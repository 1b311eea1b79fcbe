import { describe, expect, it } from 'vitest';
import type { OperationRecord } from '../../functions/domain/operation';
import type { OperationState } from '../../functions/domain/states';
import { type TransitionUpdate, transitionUpdate } from '../../functions/ledger/transition-update';

/**
 * The store's condition builder on its own: what one named transition on a record as read becomes as
 * an UpdateItem, and the record it leaves. The condition is the whole of the ledger's concurrency
 * control (no transactions, no locks), so each expectation must reach it, and a move the state machine
 * does not allow must never be built.
 */

/** A record as a caller read it. */
function read(state: OperationState, extra: Partial<OperationRecord> = {}): OperationRecord {
  return {
    pk: 'acme#op-1',
    sk: 'op',
    tenant: 'acme',
    operation_id: 'op-1',
    tool: 'test.effect',
    arguments: '{}',
    arguments_digest: 'v1:00',
    state,
    attempt: 1,
    max_attempts: 3,
    retention_seconds: 60,
    requested_by: 'agent',
    reservation_id: 'r-1',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    history: [{ at: '2026-01-01T00:00:00.000Z', from: null, to: state, attempt: 1, by: 'agent' }],
    ...extra,
  };
}

/** An expression with its placeholders replaced by the names and values they stand for. */
function spelled(built: TransitionUpdate, expression: string): string {
  return expression
    .replace(/#[0-9a-z]+/g, (ref) => {
      const name = built.names[ref];
      if (name === undefined) throw new Error(`unbound name ${ref}`);
      return name;
    })
    .replace(/:[0-9a-z]+/g, (ref) => {
      if (!(ref in built.values)) throw new Error(`unbound value ${ref}`);
      return JSON.stringify(built.values[ref]);
    });
}

describe('the condition of a transition', () => {
  it('requires the record to be in the one state it was read in (a missing item fails it too)', () => {
    const built = transitionUpdate(read('queued'), {
      transition: 'claim',
      expect: { states: ['queued'] },
      to: 'pending',
      set: {},
    });
    expect(spelled(built, built.condition)).toBe('state="queued"');
  });

  it('refuses a write that expects any other state than the one read, or more than one', () => {
    expect(() =>
      transitionUpdate(read('queued'), {
        transition: 'claim',
        expect: { states: ['failed_retryable'] },
        to: 'pending',
        set: {},
      }),
    ).toThrow('a transition must expect the state it read (queued)');
    expect(() =>
      transitionUpdate(read('queued'), {
        transition: 'claim',
        expect: { states: ['queued', 'failed_retryable'] },
        to: 'pending',
        set: {},
      }),
    ).toThrow('a transition must expect the state it read (queued)');
  });

  it('adds every expectation it is given, each bound to its own value', () => {
    const built = transitionUpdate(read('pending'), {
      transition: 'expire_lease',
      expect: {
        states: ['pending'],
        attempt: 2,
        leaseOwner: 'w-1/abc',
        digest: 'v1:00',
        leaseExpiredBefore: 1_700_000_000_000,
        attentionAt: 1_699_999_999_000,
        reservationId: 'r-1',
      },
      to: 'uncertain',
      set: {},
    });
    expect(spelled(built, built.condition).split(' AND ')).toEqual([
      'state="pending"',
      'attempt=2',
      'lease_owner="w-1/abc"',
      'arguments_digest="v1:00"',
      'lease_expires_at<1700000000000',
      'attention_at=1699999999000',
      'reservation_id="r-1"',
    ]);
  });

  it('counts an absent reconcile_checks as zero, and only zero', () => {
    const first = transitionUpdate(read('uncertain'), {
      transition: 'defer_attention',
      expect: { states: ['uncertain'], reconcileChecks: 0 },
      set: { reconcile_checks: 1 },
    });
    expect(spelled(first, first.condition)).toContain(
      '(attribute_not_exists(reconcile_checks) OR reconcile_checks=0)',
    );
    const later = transitionUpdate(read('uncertain'), {
      transition: 'defer_attention',
      expect: { states: ['uncertain'], reconcileChecks: 2 },
      set: { reconcile_checks: 3 },
    });
    expect(spelled(later, later.condition)).toContain('reconcile_checks=2');
    expect(later.condition).not.toContain('attribute_not_exists');
  });

  it('gives one placeholder per name and per equal value, however often each is used', () => {
    const built = transitionUpdate(read('pending'), {
      transition: 'record_outcome',
      expect: { states: ['pending'], attempt: 1, leaseOwner: 'w-1/abc' },
      to: 'succeeded',
      set: { outcome_code: 'succeeded', outcome_by: 'w-1/abc' },
    });
    // `succeeded` is both the outcome code and the new state; the owner is both condition and outcome_by.
    expect(Object.values(built.values).filter((v) => v === 'succeeded')).toHaveLength(1);
    expect(Object.values(built.values).filter((v) => v === 'w-1/abc')).toHaveLength(1);
    expect(new Set(Object.values(built.names)).size).toBe(Object.keys(built.names).length);
    expect(spelled(built, built.update)).toBe(
      'SET outcome_code="succeeded",outcome_by="w-1/abc",state="succeeded"',
    );
  });
});

describe('the update of a transition', () => {
  it('sets the new state and every defined field, skips undefined ones, and removes what is named', () => {
    const built = transitionUpdate(read('pending', { lease_owner: 'w', attention_at: 5 }), {
      transition: 'record_outcome',
      expect: { states: ['pending'], attempt: 1 },
      to: 'succeeded',
      set: { outcome_code: 'succeeded', error: undefined, result: '{"ok":true}' },
      remove: ['lease_owner', 'attention_at'],
    });
    expect(spelled(built, built.update)).toBe(
      'SET outcome_code="succeeded",result="{\\"ok\\":true}",state="succeeded" REMOVE lease_owner,attention_at',
    );
    expect(Object.values(built.names)).not.toContain('error');
  });

  const claimEntry = {
    at: '2026-01-01T00:00:01.000Z',
    from: 'queued' as const,
    to: 'pending' as const,
    attempt: 1,
    by: 'w',
  };
  const claim = (record: OperationRecord) =>
    transitionUpdate(record, {
      transition: 'claim',
      expect: { states: ['queued'] },
      to: 'pending',
      set: { attempt: 1 },
      history: claimEntry,
    });

  it('appends the history entry to the list the record was read with, as its JSON text', () => {
    const reserved = {
      at: '2026-01-01T00:00:00.000Z',
      from: null,
      to: 'queued' as const,
      attempt: 0,
      by: 'a',
    };
    const built = claim(read('queued', { attempt: 0, history: [reserved] }));
    expect(spelled(built, built.update)).toContain(
      `history=list_append(history,${JSON.stringify([JSON.stringify(claimEntry)])})`,
    );
  });

  it('creates the list when the record was read without history', () => {
    const built = claim(read('queued', { attempt: 0, history: [] }));
    expect(spelled(built, built.update)).toContain(
      `history=list_append(if_not_exists(history,[]),${JSON.stringify([JSON.stringify(claimEntry)])})`,
    );
  });

  it('a postponement keeps the state: no state is set', () => {
    const built = transitionUpdate(read('queued', { attempt: 0 }), {
      transition: 'defer_attention',
      expect: { states: ['queued'], attempt: 0 },
      set: { attention_at: 5, requeue_count: 1 },
    });
    expect(spelled(built, built.update)).toBe('SET attention_at=5,requeue_count=1');
  });
});

describe('the record a transition leaves', () => {
  it('is the record read with the write applied: fields set and removed, state moved, history appended', () => {
    const before = read('pending', { lease_owner: 'w', attention_at: 5, error: { code: 'x', message: 'x' } });
    const entry = {
      at: '2026-01-01T00:00:02.000Z',
      from: 'pending' as const,
      to: 'succeeded' as const,
      attempt: 1,
      by: 'w',
    };
    const { next } = transitionUpdate(before, {
      transition: 'record_outcome',
      expect: { states: ['pending'], attempt: 1, leaseOwner: 'w' },
      to: 'succeeded',
      set: { outcome_code: 'succeeded', result: '{}', updated_at: entry.at },
      remove: ['lease_owner', 'attention_at', 'error'],
      history: entry,
    });
    const { lease_owner: _owner, attention_at: _at, error: _error, ...kept } = before;
    expect(next).toEqual({
      ...kept,
      state: 'succeeded',
      outcome_code: 'succeeded',
      result: '{}',
      updated_at: entry.at,
      history: [...(before.history ?? []), entry],
    });
    // The record read is left as it was.
    expect(before.state).toBe('pending');
    expect(before.history).toHaveLength(1);
  });
});

describe('the state machine guards the builder', () => {
  it('refuses a move no named row allows, before anything is built', () => {
    expect(() =>
      transitionUpdate(read('succeeded'), {
        transition: 'claim',
        expect: { states: ['succeeded'] },
        to: 'pending',
        set: {},
      }),
    ).toThrow('claim');
    expect(() =>
      transitionUpdate(read('uncertain'), {
        transition: 'reconcile',
        expect: { states: ['uncertain'] },
        to: 'failed_terminal',
        set: {},
      }),
    ).toThrow();
  });

  it('refuses a write that keeps the state unless a postponement row allows it there', () => {
    expect(() =>
      transitionUpdate(read('uncertain'), {
        transition: 'reconcile',
        expect: { states: ['uncertain'] },
        set: { attention_at: 1 },
      }),
    ).toThrow();
    expect(() =>
      transitionUpdate(read('needs_reconciliation'), {
        transition: 'defer_attention',
        expect: { states: ['needs_reconciliation'] },
        set: { attention_at: 1 },
      }),
    ).toThrow();
    expect(() =>
      transitionUpdate(read('queued'), {
        transition: 'defer_attention',
        expect: { states: ['queued'] },
        to: 'pending',
        set: {},
      }),
    ).toThrow();
  });
});
