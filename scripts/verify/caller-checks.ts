import type { Check } from './checks';

/**
 * What `npm run verify` asks SPIN about operations the caller executes (`model/caller.pml`): the
 * caller as one more worker whose claim, heartbeat, outcome and verdict can be lost, answered into
 * the void, delayed or duplicated, and whose process can crash between any two steps. Each property
 * is proved, and refuted in a deliberately broken variant, so that none passes vacuously.
 */

/** Two callers on one key (two agents, or an agent and its restart), one reservation. */
const TWO = ['MAXRESV=1'];
/** One caller whose later run reuses the key after the record expired: a new reservation. */
const REUSE = ['MAXRESV=2', 'ONE_CALLER', 'MAXCLAIMS=3'];

const MODEL = 'caller.pml';

/** Every check of the caller model, proofs first. */
export const CALLER_CHECKS: readonly Check[] = [
  {
    name: 'caller/one_running_claim',
    model: MODEL,
    property: 'one_running_claim',
    defines: TWO,
    expect: 'holds',
    about:
      'at most one caller holds a live claim at a time: one runner per claim and per attempt, whatever is lost, late, duplicated or crashed',
  },
  {
    name: 'caller/at_most_once',
    model: MODEL,
    property: 'caller_at_most_once',
    defines: TWO,
    expect: 'holds',
    about:
      'at most one effect per reservation when callers execute it (verdicts truthful, same downstream key)',
  },
  {
    name: 'caller/at_most_once/key-reuse',
    model: MODEL,
    property: 'caller_at_most_once',
    defines: REUSE,
    expect: 'holds',
    about: 'the same across a reuse of the key after its record expired',
  },
  {
    name: 'caller/no_effect_after_terminal',
    model: MODEL,
    property: 'caller_no_effect_after_terminal',
    defines: TWO,
    expect: 'holds',
    about: 'no caller starts an effect of an operation whose record is terminal',
  },
  {
    name: 'caller/outcome_own_attempt',
    model: MODEL,
    property: 'outcome_own_attempt',
    defines: TWO,
    expect: 'holds',
    about:
      "an outcome is stored only on its token's attempt: a superseded or another caller's claim changes nothing",
  },
  {
    name: 'caller/outcome_own_attempt/key-reuse',
    model: MODEL,
    property: 'outcome_own_attempt',
    defines: REUSE,
    expect: 'holds',
    about: "the same across a reuse of the key: a late outcome never lands on the new operation's attempt",
  },
  {
    name: 'caller/verdict_own_reservation',
    model: MODEL,
    property: 'verdict_own_reservation',
    defines: REUSE,
    expect: 'holds',
    about:
      'a verdict is stored only on the reservation and attempt it was checked for: a late one never lands on a new operation that reused the key',
  },
  // Broken variants: each must be refuted.
  {
    name: 'broken/caller-claim-any-claim-id',
    model: MODEL,
    property: 'one_running_claim',
    defines: [...TWO, 'BROKEN_CLAIM_ANY_ID'],
    expect: 'refuted',
    about:
      'a repeated claim that returns the live claim to any claim_id, not only the one that made it: a second caller runs the same attempt',
    shows:
      /caller (\d) holds the claim of reservation 1 attempt (\d)[\s\S]*caller (?!\1)\d holds the claim of reservation 1 attempt \2$/,
  },
  {
    name: 'broken/caller-claim-any-claim-id/effects',
    model: MODEL,
    property: 'caller_at_most_once',
    defines: [...TWO, 'BROKEN_CLAIM_ANY_ID'],
    expect: 'refuted',
    about: 'the same broken claim: both callers run the attempt, and the target sees the effect twice',
    shows: /EFFECT of reservation 1 \(count 1\)[\s\S]*EFFECT of reservation 1 \(count 2\)$/,
  },
  {
    name: 'broken/caller-outcome-without-token',
    model: MODEL,
    property: 'outcome_own_attempt',
    defines: [...REUSE, 'BROKEN_OUTCOME_NO_TOKEN'],
    expect: 'refuted',
    about:
      'an outcome conditioned on the attempt number, not on the claim token: a late outcome of the first operation lands on the attempt of the operation that reused the key',
    shows:
      /outcome request delayed[\s\S]*reservation 2 created[\s\S]*an outcome landed on another reservation or attempt than its token's/,
  },
  {
    name: 'broken/caller-verdict-any-reservation',
    model: MODEL,
    property: 'verdict_own_reservation',
    defines: [...REUSE, 'BROKEN_VERDICT_ANY_RESV'],
    expect: 'refuted',
    about:
      'a verdict conditioned on state and attempt but not on the reservation (its downstream key): a late verdict lands on the operation that reused the key',
    shows:
      /reservation 2 created[\s\S]*a verdict landed on another reservation or attempt than the one checked/,
  },
  {
    name: 'broken/caller-starts-after-lease',
    model: MODEL,
    property: 'caller_no_effect_after_terminal',
    defines: [...TWO, 'BROKEN_START_AFTER_DEADLINE'],
    expect: 'refuted',
    about:
      'a client that starts execute on a claim whose lease has expired: the attempt that replaced it has already succeeded',
    shows:
      /lease expired[\s\S]*record -> (?:succeeded|failed_terminal)[\s\S]*an effect ran after its record was terminal$/,
  },
];

const KINDS: Record<string, string> = { '1': 'claim', '2': 'heartbeat', '3': 'outcome', '4': 'verdict' };

/** How the caller model's variables read in a shortened counterexample (scripts/verify/spin.ts). */
export const CALLER_WATCHED: Record<string, (value: string) => string> = {
  'holds[1]': (v) => holdsSays(1, v),
  'holds[2]': (v) => holdsSays(2, v),
  loss: () => 'a request or its answer lost',
  lateKind: (v) => (v === '0' ? 'the delayed request arrives' : `a ${KINDS[v] ?? v} request delayed`),
  outOther: (v) => (v === '1' ? "an outcome landed on another reservation or attempt than its token's" : ''),
  verdictOther: (v) =>
    v === '1' ? 'a verdict landed on another reservation or attempt than the one checked' : '',
};

function holdsSays(caller: number, value: string): string {
  const n = Number(value);
  return n === 0 ? '' : `caller ${caller} holds the claim of reservation ${n >> 4} attempt ${n & 15}`;
}
