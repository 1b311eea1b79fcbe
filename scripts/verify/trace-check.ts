import { readFile } from 'node:fs/promises';
import {
  type Actor,
  allowsMove,
  isState,
  isTerminal,
  type OperationState,
  TRANSITIONS,
  type TransitionName,
} from '../../functions/domain/states';

/**
 * Replays transition log lines (the fields of `functions/observability/transition-log.ts`), per
 * operation, against the transition relation that the SPIN model checks: the table of
 * `functions/domain/states.ts` plus the model's attempt rules. A line is allowed when
 *
 * - who wrote it (told by its outcome code) may make that move: the reconciler never fails an
 *   operation terminally from `uncertain`, a late owner only records a known outcome, ...;
 * - a decision ends where its outcome code says: `no_reconcile` (a tool that can neither reconcile
 *   nor dedupe) only in `needs_reconciliation`, never in a retry;
 * - the record as the replay has it could take that move: state before → after is a row of the
 *   table, read as the write's condition (an owner's commit is conditioned on `pending, uncertain,
 *   needs_reconciliation, failed_retryable`, so its line may name the state it claimed from);
 * - the attempt rises by one exactly on a claim into `pending`, and stays the same otherwise;
 * - a terminal record changes only by a new reservation of its key (retention passed).
 *
 * Lines are matched into a chain rather than taken strictly in log order, because two writers' lines
 * may reach the log in the opposite order of their writes. A move may be missing from the log only
 * where its write landed and its writer never saw the answer: it died right after the write, or the
 * answer was lost and the writer's retry failed its condition (a decision does not read back). Who
 * runs the system knows when that happened (the model suite's fault layer counts such writes per
 * operation; a load run knows it killed its process once), and says so in `unlogged`: the replay
 * bridges at most that many moves per operation, each with the fewest moves the table allows (never
 * out of a terminal state), and rejects a line that needs more. By default nothing may be missing.
 */

/** The fields of a log line the replay reads. */
export interface TraceLine {
  operation_id: string;
  state_before: string | null;
  state_after: string;
  attempt_number: number;
  outcome_code: string | null;
  /** The operation's tenant: lines of two tenants' operations with one ID are two operations. */
  tenant?: string;
  /** Optional grouping key (the model suite adds tenant and table, since tenants share operation IDs). */
  trace_key?: string;
}

/** A line the model does not allow. */
export interface Rejection {
  key: string;
  line: TraceLine;
  reason: string;
}

/** What a replay may assume about the run that wrote the lines. */
export interface TraceOptions {
  /**
   * How many moves of the operation with this trace key may be missing from the log: writes of it that
   * landed while their writer could not see the answer (a crash right after the write, a lost
   * response). Default: none.
   */
  unlogged?: (key: string) => number;
}

/** What a replay found. */
export interface TraceVerdict {
  lines: number;
  operations: number;
  transitions: number;
  observations: number;
  /** Moves bridged because a writer never saw its write land (within what the run allowed). */
  unlogged: number;
  /** Moves the run allowed to be missing, over the operations that logged lines. */
  allowed: number;
  rejected: Rejection[];
}

interface Node {
  state: OperationState | null;
  attempt: number;
}

const APPROVER_CODES = new Set(['approved', 'approval_rejected']);
const OPERATOR_CODES = new Set(['resolved_applied', 'resolved_not_applied', 'resolved_failed']);
const RECONCILER_CODES = new Set([
  'approval_expired',
  'lease_expired',
  'reconciled_applied',
  'reconciled_not_applied',
  'downstream_idempotent_retry',
  'no_reconcile',
  'reconcile_unknown',
  'tool_unregistered',
  'no_caller_verdict',
]);
/** A caller's verdict on an uncertain attempt of an operation it executes (`caller_verdict`). */
const CALLER_CODES = new Set(['verdict_applied', 'verdict_not_applied']);

/**
 * Where a decision with this outcome code may take the record. The table lets the reconciler move an
 * uncertain record to `failed_retryable` or to `needs_reconciliation`; which one is the safety rule
 * the model proves (a tool that can neither reconcile nor dedupe goes to an operator, never to a
 * retry), and the code says which rule the writer followed.
 */
const ENDS: Readonly<Record<string, readonly OperationState[]>> = {
  lease_expired: ['uncertain'],
  reconciled_applied: ['succeeded'],
  reconciled_not_applied: ['failed_retryable'],
  downstream_idempotent_retry: ['failed_retryable'],
  no_reconcile: ['needs_reconciliation'],
  reconcile_unknown: ['needs_reconciliation'],
  tool_unregistered: ['needs_reconciliation'],
  no_caller_verdict: ['needs_reconciliation'],
  verdict_applied: ['succeeded'],
  verdict_not_applied: ['failed_retryable'],
  approval_expired: ['rejected'],
  approved: ['queued'],
  approval_rejected: ['rejected'],
  resolved_applied: ['succeeded'],
  resolved_not_applied: ['failed_retryable'],
  resolved_failed: ['failed_terminal'],
  attempts_exhausted: ['failed_terminal'],
  attempts_exhausted_maybe_applied: ['needs_reconciliation'],
  policy_changed: ['needs_reconciliation'],
};

/**
 * Outcome codes that name one row whoever writes it: `attempts_exhausted` is the code of
 * `exhaust_attempts` alone, which a worker (a caller or the executor meeting a used-up record) and the
 * reconciler both write; `policy_changed` is the code of `hold_for_operator`, a worker's.
 */
const ROW_OF_CODE: Readonly<Record<string, TransitionName>> = {
  attempts_exhausted: 'exhaust_attempts',
  attempts_exhausted_maybe_applied: 'exhaust_attempts',
  policy_changed: 'hold_for_operator',
};

/** The rows whose lines carry no outcome code: reservations and claims. */
const CODELESS: readonly TransitionName[] = [
  'reserve_pending',
  'reserve_queued',
  'reserve_awaiting_approval',
  'claim',
];

/** Who may have written a line, from its outcome code: the actors of `states.ts`. */
export function writersOf(code: string | null): readonly Actor[] {
  if (code === null) return ['reserve', 'worker'];
  const row = ROW_OF_CODE[code];
  if (row) return TRANSITIONS[row].actors;
  if (APPROVER_CODES.has(code)) return ['approver'];
  if (OPERATOR_CODES.has(code)) return ['operator'];
  if (RECONCILER_CODES.has(code)) return ['reconciler'];
  if (CALLER_CODES.has(code)) return ['caller'];
  // A sanitizer that throws gives `sanitize_failed` both to an owner's commit and to a reconcile.
  if (code === 'sanitize_failed') return ['owner', 'late_owner', 'reconciler'];
  return ['owner', 'late_owner'];
}

/** The rows a line with this outcome code may be a move of: its writers' rows that log such a code. */
export function movesOf(code: string | null): TransitionName[] {
  const actors = writersOf(code);
  const byActor = (Object.keys(TRANSITIONS) as TransitionName[]).filter((n) =>
    TRANSITIONS[n].actors.some((a) => actors.includes(a)),
  );
  if (code === null) return byActor.filter((n) => CODELESS.includes(n));
  const row = ROW_OF_CODE[code];
  if (row) return [row];
  const named = Object.values(ROW_OF_CODE);
  return byActor.filter((n) => !CODELESS.includes(n) && !named.includes(n));
}

function allows(name: TransitionName, from: OperationState | null, to: OperationState): boolean {
  return allowsMove(name, from, to);
}

/** The attempt after `name` moves a record at `attempt` to `to`. */
function attemptAfter(name: TransitionName, attempt: number, to: OperationState): number {
  if (TRANSITIONS[name].from.includes(null)) return to === 'pending' ? 1 : 0;
  return name === 'claim' ? attempt + 1 : attempt;
}

/** Why `line` cannot follow `current`, or undefined when it can. */
function misfit(current: Node, line: TraceLine): string | undefined {
  const to = line.state_after as OperationState;
  const before = line.state_before as OperationState | null;
  // One write may perform any of its writer's transitions its condition admits (an owner's commit is
  // record_outcome from pending or record_late_outcome from uncertain), so the line must name a move of
  // its writer, and the record as replayed must allow one too.
  const names = movesOf(line.outcome_code);
  if (!names.some((n) => allows(n, before, to))) {
    const code = line.outcome_code === null ? 'no outcome code' : `outcome ${line.outcome_code}`;
    return `no transition of ${writersOf(line.outcome_code).join('/')} with ${code} moves ${before ?? '(none)'} -> ${to}`;
  }
  const ends = line.outcome_code === null ? undefined : ENDS[line.outcome_code];
  if (ends && !ends.includes(to)) return `outcome ${line.outcome_code} never ends in ${to}`;
  const fresh = current.state === null || isTerminal(current.state);
  for (const name of names) {
    // Only a reservation starts from "no record", and a reservation's line says so.
    if ((before === null) !== TRANSITIONS[name].from.includes(null)) continue;
    const from = TRANSITIONS[name].from.includes(null) && fresh ? null : current.state;
    if (!allows(name, from, to)) continue;
    if (attemptAfter(name, current.attempt, to) !== line.attempt_number) continue;
    return undefined;
  }
  return `the record is ${current.state ?? '(none)'} at attempt ${current.attempt}: ${before ?? '(none)'} -> ${to} at attempt ${line.attempt_number} does not follow`;
}

function apply(line: TraceLine): Node {
  return { state: line.state_after as OperationState, attempt: line.attempt_number };
}

/** The fewest unlogged moves from `current` after which `line` fits, or undefined (at most `most`). */
function bridge(current: Node, line: TraceLine, most: number): number | undefined {
  let frontier: Node[] = [current];
  const seen = new Set<string>([`${current.state}:${current.attempt}`]);
  for (let depth = 1; depth <= most; depth++) {
    const next: Node[] = [];
    for (const node of frontier) {
      // Nothing leaves a terminal state unlogged: a new reservation always logs its line first.
      if (node.state !== null && isTerminal(node.state)) continue;
      for (const name of Object.keys(TRANSITIONS) as TransitionName[]) {
        const rule = TRANSITIONS[name];
        if (!rule.from.includes(node.state)) continue;
        for (const to of rule.to) {
          // A postponement leaves the record where it is: nothing to bridge.
          if (rule.keepsState) continue;
          const n: Node = { state: to, attempt: attemptAfter(name, node.attempt, to) };
          if (n.attempt > line.attempt_number) continue;
          const id = `${n.state}:${n.attempt}`;
          if (seen.has(id)) continue;
          seen.add(id);
          // A new reservation follows a terminal state that was logged: the key's retention ran out
          // long after that write, so its writer had time to log it.
          const reusesKey = line.state_before === null && isTerminal(to);
          if (!reusesKey && misfit(n, line) === undefined) return depth;
          next.push(n);
        }
      }
    }
    frontier = next;
  }
  return undefined;
}

function malformed(line: TraceLine): string | undefined {
  if (typeof line.operation_id !== 'string' || line.operation_id === '') return 'no operation_id';
  if (!isState(line.state_after)) return `unknown state_after ${String(line.state_after)}`;
  if (line.state_before !== null && !isState(line.state_before)) {
    return `unknown state_before ${String(line.state_before)}`;
  }
  if (!Number.isSafeInteger(line.attempt_number) || line.attempt_number < 0) return 'bad attempt_number';
  return undefined;
}

/** Moves the replay looks for, beyond a run's allowance, to say what a rejected line would have needed. */
const DIAGNOSE_MOVES = 4;

/** Replays the lines of one operation key, with at most `allowance` moves missing from them. */
function replayOne(key: string, lines: TraceLine[], allowance: number, verdict: TraceVerdict): void {
  const pool: TraceLine[] = [];
  for (const line of lines) {
    const bad = malformed(line);
    if (bad) {
      verdict.rejected.push({ key, line, reason: bad });
      continue;
    }
    if (line.state_before !== null && line.state_before === line.state_after) {
      verdict.observations += 1;
      const late = /^late_outcome(?:_unrecorded)?:(.+)$/.exec(line.outcome_code ?? '');
      if (late && !TRANSITIONS.record_outcome.to.includes(late[1] as OperationState)) {
        verdict.rejected.push({ key, line, reason: `a late outcome ${late[1]} is not an attempt's outcome` });
      }
      continue;
    }
    pool.push(line);
  }
  let current: Node = { state: null, attempt: 0 };
  let left = allowance;
  while (pool.length > 0) {
    // A line that names the state the replay has is taken before one that only fits through a wider
    // write condition (an owner's commit names the state it claimed from): when a reconciler's
    // `pending → uncertain` reaches the log after the late commit `uncertain → succeeded` it let land,
    // the commit fits `pending` too, and taking it first would strand the reconciler's line.
    let index = pool.findIndex(
      (line) => line.state_before === current.state && misfit(current, line) === undefined,
    );
    if (index < 0) index = pool.findIndex((line) => misfit(current, line) === undefined);
    let gap = 0;
    if (index < 0 && left > 0) {
      // A write landed that its writer never saw: bridge the shortest gap the table allows, within
      // the moves this operation may be missing.
      for (let i = 0; i < pool.length; i++) {
        const moves = bridge(current, pool[i] as TraceLine, left);
        if (moves !== undefined && (index < 0 || moves < gap)) {
          index = i;
          gap = moves;
        }
      }
    }
    if (index < 0) break;
    const [line] = pool.splice(index, 1) as [TraceLine];
    verdict.unlogged += gap;
    left -= gap;
    verdict.transitions += 1;
    current = apply(line);
  }
  for (const line of pool) {
    let reason = misfit(current, line) ?? 'does not follow';
    const needed = bridge(current, line, Math.max(DIAGNOSE_MOVES, left + 1));
    if (needed !== undefined) {
      reason += `; ${needed} move(s) missing from the log would bridge it, but the run allows ${left} more for this operation (writes that landed unseen by their writer)`;
    }
    verdict.rejected.push({ key, line, reason });
  }
}

/**
 * Replays transition lines grouped by `trace_key`, else by tenant and `operation_id` (two tenants may
 * use one operation ID), else by `operation_id` alone.
 *
 * @example
 * ```ts
 * const verdict = checkTrace(lines, { unlogged: (key) => lostWrites.get(key) ?? 0 });
 * if (verdict.rejected.length > 0) process.exit(1);
 * ```
 */
export function checkTrace(lines: readonly TraceLine[], options: TraceOptions = {}): TraceVerdict {
  const byKey = new Map<string, TraceLine[]>();
  for (const line of lines) {
    const key =
      line.trace_key ??
      (typeof line.tenant === 'string' ? `${line.tenant}/${line.operation_id}` : line.operation_id);
    const list = byKey.get(key) ?? [];
    list.push(line);
    byKey.set(key, list);
  }
  const verdict: TraceVerdict = {
    lines: lines.length,
    operations: byKey.size,
    transitions: 0,
    observations: 0,
    unlogged: 0,
    allowed: 0,
    rejected: [],
  };
  for (const [key, list] of byKey) {
    const allowance = options.unlogged?.(key) ?? 0;
    verdict.allowed += allowance;
    replayOne(key, list, allowance, verdict);
  }
  return verdict;
}

/**
 * A record of a trace file that says how many writes of one operation landed unseen by their writer
 * (`{"trace_key": …, "unlogged_writes": n}`; several records of one key add up).
 */
export interface UnloggedRecord {
  trace_key: string;
  unlogged_writes: number;
}

/** What a trace file holds: transition lines, and the writes per trace key that may have no line. */
export interface TraceFile {
  lines: TraceLine[];
  unlogged: Map<string, number>;
}

/**
 * Reads a file of JSON lines: transition lines and {@link UnloggedRecord}s; other log records are
 * skipped.
 */
export async function readTraceFile(file: string): Promise<TraceFile> {
  const text = await readFile(file, 'utf8');
  const out: TraceFile = { lines: [], unlogged: new Map() };
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if ('state_after' in value && 'operation_id' in value) {
      out.lines.push(value as TraceLine);
    } else if ('unlogged_writes' in value && 'trace_key' in value) {
      const { trace_key: key, unlogged_writes: n } = value as UnloggedRecord;
      if (typeof key === 'string' && Number.isSafeInteger(n) && n > 0) {
        out.unlogged.set(key, (out.unlogged.get(key) ?? 0) + n);
      }
    }
  }
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = args.find((a) => a.startsWith('--unlogged='));
  const files = args.filter((a) => a !== flag);
  const perOperation = flag === undefined ? 0 : Number(flag.slice('--unlogged='.length));
  if (files.length === 0 || !Number.isSafeInteger(perOperation) || perOperation < 0) {
    console.error('usage: tsx scripts/verify/trace-check.ts [--unlogged=N] <log file>...');
    console.error('  --unlogged=N  moves each operation may be missing (writers that died after a write)');
    process.exit(2);
  }
  const read = await Promise.all(files.map(readTraceFile));
  const unlogged = new Map<string, number>();
  for (const f of read) for (const [k, n] of f.unlogged) unlogged.set(k, (unlogged.get(k) ?? 0) + n);
  const verdict = checkTrace(
    read.flatMap((f) => f.lines),
    { unlogged: (key) => (unlogged.get(key) ?? 0) + perOperation },
  );
  printVerdict(verdict);
  if (verdict.rejected.length > 0) process.exit(1);
}

/** Prints a verdict: counts, then each rejected line with its reason. */
export function printVerdict(verdict: TraceVerdict): void {
  console.log(
    `trace check: ${verdict.lines} lines checked (${verdict.transitions} transitions, ${verdict.observations} observations) over ${verdict.operations} operations, ${verdict.unlogged} unlogged moves bridged (${verdict.allowed} allowed by the run's lost answers), ${verdict.rejected.length} rejected`,
  );
  for (const r of verdict.rejected.slice(0, 20)) {
    console.log(`  REJECTED ${r.key}: ${r.reason}  ${JSON.stringify(r.line)}`);
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await main();
