/**
 * The operation state machine (the contract, §2), written down once as data. Every ledger write names the
 * transition it performs and {@link assertTransition} checks it against this table, so a code path
 * that tries an undocumented move fails loudly in tests instead of corrupting a record.
 */

/** Every state an operation can be in. */
export const STATES = [
  'awaiting_approval',
  'queued',
  'pending',
  'succeeded',
  'failed_terminal',
  'failed_retryable',
  'uncertain',
  'needs_reconciliation',
  'rejected',
] as const;

/** One operation state. */
export type OperationState = (typeof STATES)[number];

/** States that never change again; their records get `expires_at`. */
export const TERMINAL_STATES: ReadonlySet<OperationState> = new Set([
  'succeeded',
  'failed_terminal',
  'rejected',
]);

/** True for `succeeded`, `failed_terminal` and `rejected`. */
export function isTerminal(state: OperationState): boolean {
  return TERMINAL_STATES.has(state);
}

/** True for any string that names a state. */
export function isState(value: unknown): value is OperationState {
  return typeof value === 'string' && (STATES as readonly string[]).includes(value);
}

/**
 * Who performs a transition: each actor may make only its own moves. The trace checker
 * (scripts/verify/trace-check.ts) reads it to tell, from a log line's outcome code, which rows the line
 * may be a move of. `worker` is whoever claims an attempt (a caller or the executor); `owner` and
 * `late_owner` are the holder of the attempt's lease, committing its outcome in time or late (or, for
 * an operation its caller executes, keeping its claim alive); `caller` is any agent of the tenant of
 * an operation its caller executes, posting what it found at the target (its verdict).
 */
export const ACTORS = [
  'reserve',
  'approver',
  'worker',
  'owner',
  'reconciler',
  'operator',
  'late_owner',
  'caller',
] as const;

/** One actor of {@link ACTORS}. */
export type Actor = (typeof ACTORS)[number];

/** Names of the transitions, one per arrow of the contract's §2. */
export type TransitionName =
  | 'reserve_pending'
  | 'reserve_queued'
  | 'reserve_awaiting_approval'
  | 'approve'
  | 'reject'
  | 'expire_approval'
  | 'claim'
  | 'exhaust_attempts'
  | 'hold_for_operator'
  | 'record_outcome'
  | 'expire_lease'
  | 'reconcile'
  | 'defer_attention'
  | 'resolve'
  | 'record_late_outcome'
  | 'extend_lease'
  | 'caller_verdict';

/** One allowed move: from which states, to which states, by whom. */
export interface TransitionRule {
  readonly from: readonly (OperationState | null)[];
  readonly to: readonly OperationState[];
  /** Everyone who performs this move (most moves have one; exhaustion has two). */
  readonly actors: readonly Actor[];
  /**
   * The move keeps the state it found (`to` is then the same list as `from`): a postponement that
   * changes only when the record is looked at next. Such a write names the row but no new state.
   */
  readonly keepsState?: true;
}

/** The states whose records the reconciler looks at again later: every unresolved state but the operator's. */
const POSTPONABLE: readonly OperationState[] = [
  'awaiting_approval',
  'queued',
  'pending',
  'failed_retryable',
  'uncertain',
];

/** The whole machine. `null` is "no record". */
export const TRANSITIONS: Readonly<Record<TransitionName, TransitionRule>> = {
  reserve_pending: { from: [null], to: ['pending'], actors: ['reserve'] },
  reserve_queued: { from: [null], to: ['queued'], actors: ['reserve'] },
  reserve_awaiting_approval: { from: [null], to: ['awaiting_approval'], actors: ['reserve'] },
  approve: { from: ['awaiting_approval'], to: ['queued'], actors: ['approver'] },
  reject: { from: ['awaiting_approval'], to: ['rejected'], actors: ['approver'] },
  expire_approval: { from: ['awaiting_approval'], to: ['rejected'], actors: ['reconciler'] },
  claim: { from: ['queued', 'failed_retryable'], to: ['pending'], actors: ['worker'] },
  // A record whose attempts are used up is closed by whoever meets it next: a caller or the executor
  // about to claim it (engine/submit-operation.ts), or the reconciler's pass (engine/reconcile.ts).
  // With attempts left none, an operation that may have applied (an uncertain attempt retried on the
  // target's dedupe) goes to an operator instead (the contract, §7), whoever executes it.
  exhaust_attempts: {
    from: ['failed_retryable'],
    to: ['failed_terminal', 'needs_reconciliation'],
    actors: ['worker', 'reconciler'],
  },
  // A worker about to claim an operation whose tool no longer matches the policy it was reserved under
  // (functions/domain/policy.ts) hands it to an operator instead of running it (`policy_changed`).
  hold_for_operator: {
    from: ['queued', 'failed_retryable'],
    to: ['needs_reconciliation'],
    actors: ['worker'],
  },
  record_outcome: {
    from: ['pending'],
    to: ['succeeded', 'failed_terminal', 'failed_retryable', 'uncertain'],
    actors: ['owner'],
  },
  expire_lease: { from: ['pending'], to: ['uncertain'], actors: ['reconciler'] },
  reconcile: {
    from: ['uncertain'],
    to: ['succeeded', 'failed_retryable', 'needs_reconciliation'],
    actors: ['reconciler'],
  },
  // The reconciler's "not yet": a live lease or approval deadline, a re-enqueue with backoff, a target
  // that answered `unknown`. Only the attention time (and its counters) change.
  defer_attention: { from: POSTPONABLE, to: POSTPONABLE, actors: ['reconciler'], keepsState: true },
  resolve: {
    from: ['uncertain', 'needs_reconciliation'],
    to: ['succeeded', 'failed_terminal', 'failed_retryable'],
    actors: ['operator'],
  },
  record_late_outcome: {
    from: ['uncertain', 'needs_reconciliation', 'failed_retryable'],
    to: ['succeeded', 'failed_terminal'],
    actors: ['late_owner'],
  },
  // Operations the caller executes (the contract, §14). The claimant's heartbeat: a live claim of the
  // same attempt gets a later `lease_expires_at`; nothing else changes, so it logs no line.
  extend_lease: { from: ['pending'], to: ['pending'], actors: ['owner'], keepsState: true },
  // What a caller found at the target of an uncertain attempt: applied, or not applied (then its next
  // request claims the next attempt with the same downstream key). Never a terminal failure: that is
  // an owner's known outcome or an operator's decision.
  caller_verdict: {
    from: ['uncertain', 'needs_reconciliation'],
    to: ['succeeded', 'failed_retryable'],
    actors: ['caller'],
  },
};

/**
 * Throws unless `from → to` is an allowed move of the named transition. Called by every ledger write
 * before it is sent.
 *
 * @example
 * ```ts
 * assertTransition('claim', 'queued', 'pending');       // ok
 * assertTransition('claim', 'succeeded', 'pending');    // throws
 * ```
 */
export function assertTransition(
  name: TransitionName,
  from: readonly (OperationState | null)[],
  to: OperationState,
): void {
  const rule = TRANSITIONS[name];
  const badFrom = from.filter((s) => !rule.from.includes(s) || (rule.keepsState && s !== to));
  if (badFrom.length > 0 || !rule.to.includes(to)) {
    throw new Error(`transition ${name} does not allow ${from.join('|')} -> ${to}`);
  }
}

/** Whether the named transition moves a record from `from` to `to` (the same state, for a postponement). */
export function allowsMove(name: TransitionName, from: OperationState | null, to: OperationState): boolean {
  const rule = TRANSITIONS[name];
  return rule.from.includes(from) && rule.to.includes(to) && (!rule.keepsState || from === to);
}

/**
 * Like {@link assertTransition} for a write whose condition covers several named transitions (a
 * commit accepted from `pending` as `record_outcome` or from `uncertain` as `record_late_outcome`):
 * each expected state must be allowed, towards `to`, by at least one of them. Without `to` the write
 * keeps whatever state it finds, and each expected state must be one a postponement row keeps.
 */
export function assertTransitions(
  names: TransitionName | readonly TransitionName[],
  from: readonly (OperationState | null)[],
  to?: OperationState,
): void {
  const list = typeof names === 'string' ? [names] : names;
  for (const state of from) {
    const ok = list.some((name) =>
      to === undefined
        ? TRANSITIONS[name].keepsState === true && state !== null && allowsMove(name, state, state)
        : allowsMove(name, state, to),
    );
    if (!ok) throw new Error(`transitions ${list.join('|')} do not allow ${state} -> ${to ?? state}`);
  }
}
