/**
 * What `npm run verify` asks SPIN, with the bounds of each run. A check names an LTL property of
 * `model/ledger.pml`, the cast and bounds it is checked with (preprocessor switches), and whether SPIN
 * must prove it (`expect: 'holds'`) or refute a deliberately broken variant (`expect: 'refuted'`).
 * Every property has at least one refuted variant, so none can pass vacuously.
 */

/** One SPIN run. */
export interface Check {
  /** Stable name, printed and used by tests. */
  name: string;
  /** The Promela model, in model/ (default `ledger.pml`). */
  model?: string;
  /** The `ltl` property of the model. */
  property: string;
  /** `-D` switches for `spin -a` (the model's bounds, cast and variant). */
  defines: readonly string[];
  /** Liveness: acceptance cycles under weak fairness (`pan -a -f`). */
  liveness?: boolean;
  expect: 'holds' | 'refuted';
  /** What the run shows, for people. */
  about: string;
  /**
   * For a broken variant: what its counterexample must show (matched against the shortened trail,
   * one event a line), so that the variant is refuted for the reason it claims and not another.
   */
  shows?: RegExp;
}

/** One caller with the key (sync, one retry, reusing the key after expiry), the executor, a reconciler, an operator, every tool kind. */
const BASE = ['APPROVAL=0', 'NO_SECOND_CALLER'];
/** A second caller with other arguments for the same key (a conflict), one reservation. */
const CONFLICT = ['APPROVAL=0', 'MAXRESV=1'];
/** A tool that needs approval, an approver shown either caller's digest. */
const APPROVAL = ['APPROVAL=1', 'NO_SECOND_CALLER', 'FIRST_TRIES=1'];
/**
 * The tool redeployed as a read at any moment: the policy bound to the reservation governs. One
 * reservation (key reuse is checked above; with it, these runs take many times longer).
 */
const POLICY_CHANGE = [...BASE, 'MAXRESV=1', 'POLICY_CHANGE'];
/** The fairness run: one reconciler, one submission. */
const LIVE = ['APPROVAL=0', 'NO_SECOND_CALLER', 'FIRST_TRIES=1', 'LIVENESS'];

/** Every check, proofs first. */
export const CHECKS: readonly Check[] = [
  {
    name: 'at_most_once',
    property: 'at_most_once',
    defines: BASE,
    expect: 'holds',
    about:
      'at most one effect per reservation (a deduped retry with the same downstream key is the same effect)',
  },
  {
    name: 'at_most_once/two-reconcilers',
    property: 'at_most_once',
    defines: [...BASE, 'RECONCILERS=2', 'FIRST_TRIES=1'],
    expect: 'holds',
    about: 'the same with two reconcilers running at once',
  },
  {
    name: 'at_most_once/respond-async',
    property: 'at_most_once',
    defines: [...BASE, 'FIRST_MODE=M_ASYNC'],
    expect: 'holds',
    about: 'the same for a respond-async caller (queued, run by the executor)',
  },
  {
    name: 'at_most_once/three-attempts',
    property: 'at_most_once',
    defines: [...BASE, 'MAXATT=3', 'FIRST_TRIES=1'],
    expect: 'holds',
    about: 'the same with three attempts (where a stale resolution could start a third one)',
  },
  {
    name: 'approved_digest',
    property: 'approved_digest',
    defines: APPROVAL,
    expect: 'holds',
    about: 'an effect only after an approval of that digest',
  },
  {
    name: 'terminal_immutable',
    property: 'terminal_immutable',
    defines: BASE,
    expect: 'holds',
    about: 'a terminal record never changes',
  },
  {
    name: 'digest_bound',
    property: 'digest_bound',
    defines: CONFLICT,
    expect: 'holds',
    about: "no effect runs with arguments other than the reservation's (a different digest is a conflict)",
  },
  {
    name: 'superseded_ignored',
    property: 'superseded_ignored',
    defines: BASE,
    expect: 'holds',
    about: "a superseded attempt's outcome is never applied",
  },
  {
    name: 'success_is_own_effect',
    property: 'success_is_own_effect',
    defines: BASE,
    expect: 'holds',
    about: "a success is the reservation's own effect, also after the key expired and was reused",
  },
  {
    name: 'at_most_once/policy-change',
    property: 'at_most_once',
    defines: [...POLICY_CHANGE, 'FIRST_MODE=M_ASYNC'],
    expect: 'holds',
    about:
      'the same when the tool is redeployed as a read at any moment: the executor still claims, and a claim under another policy goes to an operator',
  },
  {
    name: 'no_effect_after_terminal',
    property: 'no_effect_after_terminal',
    defines: POLICY_CHANGE,
    expect: 'holds',
    about:
      "no effect of the key's operation after its record is terminal when the tool is redeployed as a read and back as a write, at any moment: the policy bound to the reservation governs, a retry is its replay",
  },
  {
    name: 'approved_digest/policy-change',
    property: 'approved_digest',
    defines: [...APPROVAL, 'MAXRESV=1', 'POLICY_CHANGE'],
    expect: 'holds',
    about: 'an approval-bound write redeployed as a read still runs only after an approval of its digest',
  },
  {
    name: 'exhausted_truthful',
    property: 'exhausted_truthful',
    defines: BASE,
    expect: 'holds',
    about:
      "attempts that ran out end failed_terminal only when no attempt applied; after an uncertain attempt retried on the target's dedupe, an operator decides",
  },
  {
    name: 'settles',
    property: 'settles',
    defines: LIVE,
    liveness: true,
    expect: 'holds',
    about: 'every operation eventually terminal or in front of an operator (weak fairness)',
  },
  {
    name: 'settles/approval',
    property: 'settles',
    defines: [...LIVE.filter((d) => d !== 'APPROVAL=0'), 'APPROVAL=1'],
    liveness: true,
    expect: 'holds',
    about: 'the same for a tool that needs approval: approved, rejected, or rejected at its deadline',
  },
  // Broken variants: each must be refuted.
  {
    name: 'broken/old-downstream-key-dedupe',
    property: 'success_is_own_effect',
    defines: [...BASE, 'TOOL_KIND=T_IDEM', 'BROKEN_OLD_KEY'],
    expect: 'refuted',
    about:
      'downstream key from tenant + operation ID only: the target dedupes the reused key and swallows the new operation',
    shows:
      /reservation 2 created(?:(?!EFFECT of reservation 2)[\s\S])*record -> succeeded(?:\n[^\n]*outcome of attempt \d stored)?$/,
  },
  {
    name: 'broken/old-downstream-key-marker',
    property: 'success_is_own_effect',
    defines: [...BASE, 'TOOL_KIND=T_REC', 'BROKEN_OLD_KEY'],
    expect: 'refuted',
    about:
      "downstream key from tenant + operation ID only: reconcile finds the old operation's append marker",
    shows: /reservation 2 created(?:(?!EFFECT of reservation 2)[\s\S])*Reconciler: record -> succeeded$/,
  },
  {
    name: 'broken/no-lease-expiry',
    property: 'settles',
    defines: [...LIVE, 'BROKEN_NO_LEASE_EXPIRY'],
    liveness: true,
    expect: 'refuted',
    about:
      'a reconciler that never expires leases: a crash between reserve and effect leaves the operation pending forever',
    shows:
      /record -> pending\n(?:(?!record ->)[\s\S])*worker crashed(?:(?!record ->)[\s\S])*from here the run repeats forever/,
  },
  {
    name: 'broken/no-approval-expiry',
    property: 'settles',
    defines: [...LIVE.filter((d) => d !== 'APPROVAL=0'), 'APPROVAL=1', 'BROKEN_NO_APPROVAL_EXPIRY'],
    liveness: true,
    expect: 'refuted',
    about:
      'a reconciler that never rejects at the approval deadline: an operation nobody approves waits forever',
    shows:
      /record -> awaiting_approval\n(?:(?!record ->)[\s\S])*approval deadline passed(?:(?!record ->)[\s\S])*from here the run repeats forever/,
  },
  {
    name: 'broken/retry-unknown',
    property: 'at_most_once',
    defines: [...BASE, 'TOOL_KIND=T_NONE', 'BROKEN_RETRY_UNKNOWN'],
    expect: 'refuted',
    about:
      'an uncertain attempt of a tool that can neither reconcile nor dedupe is retried: a crash between effect and commit runs it twice',
    shows:
      /EFFECT of reservation 1 \(count 1\)\n[^\n]*worker crashed[\s\S]*Reconciler: record -> failed_retryable[\s\S]*EFFECT of reservation 1 \(count 2\)$/,
  },
  {
    name: 'broken/start-after-deadline',
    property: 'at_most_once',
    defines: [...BASE, 'BROKEN_NO_DEADLINE'],
    expect: 'refuted',
    about: 'a worker that stalled past its lease still starts the tool',
    shows:
      /lease expired\n(?:(?!new lease)[\s\S])*EFFECT of reservation (\d) \(count 1\)[\s\S]*EFFECT of reservation \1 \(count 2\)$/,
  },
  {
    name: 'broken/claim-without-read-back',
    property: 'at_most_once',
    defines: [...BASE, 'BROKEN_CLAIM_NO_READBACK'],
    expect: 'refuted',
    about:
      'a worker that takes a claim whose retried write failed its condition for its own, without reading back the lease owner and attempt: it runs next to the worker whose claim landed',
    // The worker whose claim was lost never lands one afterwards, yet runs an effect of a reservation
    // that ends with two.
    shows:
      /proc (\d+) Caller: claim request or response lost\n(?:(?!proc \1 Caller: record -> pending)[\s\S])*proc \1 Caller: EFFECT of reservation (\d) \(count (?:2\)|1\)(?:(?!proc \1 Caller: record -> pending)[\s\S])*EFFECT of reservation \2 \(count 2\))$/,
  },
  {
    name: 'broken/resolution-without-attempt',
    property: 'at_most_once',
    // A stale resolution needs a third attempt to run a second effect.
    defines: [...BASE, 'BROKEN_RESOLVE_NO_ATTEMPT', 'MAXATT=3'],
    expect: 'refuted',
    about: 'a resolution not bound to the attempt it looked at: a retried not_applied starts another attempt',
    shows: /attempt = 2[\s\S]*Operator: record -> failed_retryable[\s\S]*attempt = 3[\s\S]*\(count 2\)$/,
  },
  {
    name: 'broken/decision-without-reservation',
    property: 'at_most_once',
    defines: [...BASE, 'BROKEN_DECISION_ANY_RESV'],
    expect: 'refuted',
    about:
      'a decision conditioned on state and attempt but not on the reservation it read: a stale verdict lands on a new operation that reused the expired key',
    shows: /Clock: retention passed[\s\S]*reservation 2 created[\s\S]*EFFECT of reservation 2 \(count 2\)$/,
  },
  {
    name: 'broken/approve-any-digest',
    property: 'approved_digest',
    defines: [...APPROVAL, 'BROKEN_APPROVE_ANY_DIGEST'],
    expect: 'refuted',
    about: 'an approval write that does not name the digest approves other arguments',
    shows: /approval of digest 2 recorded[\s\S]*an effect ran without an approval of its digest$/,
  },
  {
    name: 'broken/resolve-any-state',
    property: 'terminal_immutable',
    defines: [...BASE, 'BROKEN_RESOLVE_ANY_STATE'],
    expect: 'refuted',
    about: 'a resolution not conditioned on the state overwrites a terminal record',
    shows: /record -> (?:succeeded|failed_terminal)[\s\S]*Operator: a write changed a terminal record$/,
  },
  {
    name: 'broken/no-digest-check',
    property: 'digest_bound',
    defines: [...CONFLICT, 'BROKEN_NO_DIGEST_CHECK'],
    expect: 'refuted',
    about: 'a retry with other arguments claims the record and runs them',
    shows: /an effect ran with another caller's arguments$/,
  },
  {
    name: 'broken/read-path-before-the-ledger',
    property: 'no_effect_after_terminal',
    defines: [...POLICY_CHANGE, 'BROKEN_READ_PATH_FIRST'],
    expect: 'refuted',
    about:
      'a call takes the read path because the tool is a read now, before looking at the ledger: a retry of a succeeded write runs its effect again',
    shows: /the tool is redeployed as a read[\s\S]*an effect ran after its record was terminal$/,
  },
  {
    name: 'broken/executor-read-path',
    property: 'at_most_once',
    defines: [...POLICY_CHANGE, 'FIRST_MODE=M_ASYNC', 'BROKEN_WORKER_READ_PATH'],
    expect: 'refuted',
    about:
      'the executor takes the read path for a tool that is a read now: the queued write runs unclaimed, stays queued, and runs again on the next re-send',
    shows: /the tool is redeployed as a read[\s\S]*EFFECT of reservation 1 \(count 2\)/,
  },
  {
    name: 'broken/exhaust-ignores-maybe-applied',
    property: 'exhausted_truthful',
    defines: [...BASE, 'TOOL_KIND=T_IDEM', 'BROKEN_EXHAUST_IGNORES_MAYBE'],
    expect: 'refuted',
    about:
      'attempts that ran out always end failed_terminal: after an applied attempt whose answer was lost and a deduped retry, the record says the effect never happened',
    shows:
      /EFFECT of reservation 1 \(count 1\)[\s\S]*Reconciler: record -> failed_retryable[\s\S]*record -> failed_terminal\n[^\n]*attempts ran out into failed_terminal after an effect$/,
  },
  {
    name: 'broken/late-outcome-applied',
    property: 'superseded_ignored',
    defines: [...BASE, 'BROKEN_LATE_APPLY'],
    expect: 'refuted',
    about: "a commit not conditioned on attempt and lease owner applies a superseded attempt's outcome",
    shows: /attempt = 2[\s\S]*outcome of attempt 1 stored$/,
  },
];
