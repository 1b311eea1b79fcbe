import { describe, expect, it } from 'vitest';
import {
  assertTransition,
  assertTransitions,
  isTerminal,
  STATES,
  TRANSITIONS,
} from '../../functions/domain/states';

describe('the state machine', () => {
  it('has no transition out of a terminal state', () => {
    for (const rule of Object.values(TRANSITIONS)) {
      for (const from of rule.from) {
        if (from !== null) expect(isTerminal(from)).toBe(false);
      }
    }
  });

  it('every state is reachable from "no record"', () => {
    const reached = new Set<string | null>([null]);
    let grew = true;
    while (grew) {
      grew = false;
      for (const rule of Object.values(TRANSITIONS)) {
        if (rule.from.some((f) => reached.has(f))) {
          for (const to of rule.to) {
            if (reached.has(to)) continue;
            reached.add(to);
            grew = true;
          }
        }
      }
    }
    expect(STATES.filter((s) => !reached.has(s))).toEqual([]);
  });

  it('a caller’s heartbeat keeps pending, and a caller’s verdict never fails an operation terminally', () => {
    expect(() => assertTransitions('extend_lease', ['pending'])).not.toThrow();
    expect(() => assertTransitions('extend_lease', ['uncertain'])).toThrow();
    expect(() => assertTransition('extend_lease', ['pending'], 'uncertain')).toThrow();
    expect(() => assertTransition('caller_verdict', ['uncertain'], 'succeeded')).not.toThrow();
    expect(() =>
      assertTransition('caller_verdict', ['needs_reconciliation'], 'failed_retryable'),
    ).not.toThrow();
    expect(() => assertTransition('caller_verdict', ['uncertain'], 'failed_terminal')).toThrow();
    expect(() => assertTransition('caller_verdict', ['pending'], 'succeeded')).toThrow();
    expect(() => assertTransition('caller_verdict', ['failed_retryable'], 'succeeded')).toThrow();
    expect(TRANSITIONS.caller_verdict.actors).toEqual(['caller']);
  });

  it('refuses undocumented moves', () => {
    expect(() => assertTransition('claim', ['succeeded'], 'pending')).toThrow();
    expect(() => assertTransition('record_outcome', ['pending'], 'queued')).toThrow();
    expect(() => assertTransition('reconcile', ['uncertain'], 'failed_terminal')).toThrow();
    expect(() => assertTransitions(['record_outcome'], ['uncertain'], 'succeeded')).toThrow();
    expect(() =>
      assertTransitions(['record_outcome', 'record_late_outcome'], ['pending', 'uncertain'], 'succeeded'),
    ).not.toThrow();
    expect(() =>
      assertTransitions(['record_outcome', 'record_late_outcome'], ['uncertain'], 'uncertain'),
    ).toThrow();
  });
});
