import { describe, expect, it } from 'vitest';
import { transitionUpdate } from '../../functions/ledger/transition-update';

/**
 * The store's condition builder on its own: what one named transition becomes as an UpdateItem. The
 * condition is the whole of the ledger's concurrency control (no transactions, no locks), so each
 * expectation must reach it, and a move the state machine does not allow must never be built.
 */

describe('the condition of a transition', () => {
  it('always requires the record to exist and to be in one of the expected states', () => {
    const built = transitionUpdate({
      transition: 'claim',
      expect: { states: ['queued', 'failed_retryable'] },
      to: 'pending',
      set: {},
    });
    expect(built.condition).toBe('attribute_exists(pk) AND #state IN (:from0, :from1)');
    expect(built.names['#state']).toBe('state');
    expect(built.values).toMatchObject({ ':from0': 'queued', ':from1': 'failed_retryable' });
  });

  it('adds every expectation it is given, each bound to its own value', () => {
    const built = transitionUpdate({
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
    expect(built.condition.split(' AND ')).toEqual([
      'attribute_exists(pk)',
      '#state IN (:from0)',
      '#attempt = :attempt',
      '#lease_owner = :lease_owner',
      '#digest = :digest',
      '#lease_expires_at < :lease_limit',
      '#attention_at = :attention_at',
      '#reservation_id = :reservation_id',
    ]);
    expect(built.names).toMatchObject({
      '#attempt': 'attempt',
      '#lease_owner': 'lease_owner',
      '#digest': 'arguments_digest',
      '#lease_expires_at': 'lease_expires_at',
      '#attention_at': 'attention_at',
      '#reservation_id': 'reservation_id',
    });
    expect(built.values).toMatchObject({
      ':attempt': 2,
      ':lease_owner': 'w-1/abc',
      ':digest': 'v1:00',
      ':lease_limit': 1_700_000_000_000,
      ':attention_at': 1_699_999_999_000,
      ':reservation_id': 'r-1',
    });
  });

  it('counts an absent reconcile_checks as zero, and only zero', () => {
    const first = transitionUpdate({
      transition: 'defer_attention',
      expect: { states: ['uncertain'], reconcileChecks: 0 },
      set: { reconcile_checks: 1 },
    });
    expect(first.condition).toContain('(attribute_not_exists(#checks) OR #checks = :checks)');
    const later = transitionUpdate({
      transition: 'defer_attention',
      expect: { states: ['uncertain'], reconcileChecks: 2 },
      set: { reconcile_checks: 3 },
    });
    expect(later.condition).toContain('#checks = :checks');
    expect(later.condition).not.toContain('attribute_not_exists(#checks)');
    expect(later.values[':checks']).toBe(2);
  });
});

describe('the update of a transition', () => {
  it('sets the new state and every defined field, skips undefined ones, and removes what is named', () => {
    const built = transitionUpdate({
      transition: 'record_outcome',
      expect: { states: ['pending'], attempt: 1 },
      to: 'succeeded',
      set: { outcome_code: 'succeeded', error: undefined, result: '{"ok":true}' },
      remove: ['lease_owner', 'attention_at'],
    });
    expect(built.update).toBe('SET #s0 = :s0, #s1 = :s1, #s2 = :s2 REMOVE #r0, #r1');
    expect(Object.values(built.names)).not.toContain('error');
    expect(built.names).toMatchObject({
      '#s0': 'outcome_code',
      '#s1': 'result',
      '#s2': 'state',
      '#r0': 'lease_owner',
      '#r1': 'attention_at',
    });
    expect(built.values).toMatchObject({ ':s0': 'succeeded', ':s1': '{"ok":true}', ':s2': 'succeeded' });
  });

  it('appends the history entry to the list, creating it when absent', () => {
    const entry = {
      at: '2026-01-01T00:00:00.000Z',
      from: 'queued' as const,
      to: 'pending' as const,
      attempt: 1,
      by: 'w',
    };
    const built = transitionUpdate({
      transition: 'claim',
      expect: { states: ['queued'] },
      to: 'pending',
      set: { attempt: 1 },
      history: entry,
    });
    expect(built.update).toContain('#history = list_append(if_not_exists(#history, :empty), :h)');
    expect(built.values[':h']).toEqual([entry]);
    expect(built.values[':empty']).toEqual([]);
  });

  it('a postponement keeps the state: no state is set', () => {
    const built = transitionUpdate({
      transition: 'defer_attention',
      expect: { states: ['queued'], attempt: 0 },
      set: { attention_at: 5, requeue_count: 1 },
    });
    expect(Object.values(built.names).filter((name) => name === 'state')).toEqual(['state']);
    expect(built.update).toBe('SET #s0 = :s0, #s1 = :s1');
    expect(built.names).toMatchObject({ '#s0': 'attention_at', '#s1': 'requeue_count' });
  });
});

describe('the state machine guards the builder', () => {
  it('refuses a move no named row allows, before anything is built', () => {
    expect(() =>
      transitionUpdate({ transition: 'claim', expect: { states: ['succeeded'] }, to: 'pending', set: {} }),
    ).toThrow('claim');
    expect(() =>
      transitionUpdate({
        transition: 'reconcile',
        expect: { states: ['uncertain'] },
        to: 'failed_terminal',
        set: {},
      }),
    ).toThrow();
  });

  it('refuses a write that keeps the state unless a postponement row allows it there', () => {
    expect(() =>
      transitionUpdate({
        transition: 'reconcile',
        expect: { states: ['uncertain'] },
        set: { attention_at: 1 },
      }),
    ).toThrow();
    expect(() =>
      transitionUpdate({
        transition: 'defer_attention',
        expect: { states: ['needs_reconciliation'] },
        set: { attention_at: 1 },
      }),
    ).toThrow();
    expect(() =>
      transitionUpdate({
        transition: 'defer_attention',
        expect: { states: ['queued'] },
        to: 'pending',
        set: {},
      }),
    ).toThrow();
  });
});
