import type { TransitionLogLine } from '../../../functions/observability/transition-log';
import { checkTrace, type TraceLine } from '../../../scripts/verify/trace-check';

/**
 * Every schedule replays its own transition lines against the model's transition relation
 * (scripts/verify/trace-check.ts) once it is over. A move may be missing from the log only where the
 * schedule's faults let a write land unseen by its writer (a crash right after it, a lost response);
 * the fault layer counts those per record, and the replay may bridge no more than that. What the
 * replays found is summed here and printed at the end of each model file.
 */

/** Totals of the replays in this test file. */
export const traceStats = {
  schedules: 0,
  lines: 0,
  transitions: 0,
  observations: 0,
  operations: 0,
  /** Moves bridged where a write landed unseen by its writer. */
  unlogged: 0,
  /** Moves the schedules' faults allowed to be missing. */
  allowed: 0,
  rejected: 0,
};

/**
 * Replays one schedule's lines, grouped by `keyOf` (a record's `pk`: tenants share operation IDs),
 * with `unseen` writes per key allowed to have no line. Returns one message per rejected line, with
 * the line and the reason.
 */
export function replaySchedule(
  lines: readonly TransitionLogLine[],
  keyOf: (line: TransitionLogLine) => string,
  unseen: ReadonlyMap<string, number> = new Map(),
): string[] {
  const trace: TraceLine[] = lines.map((line) => ({ ...line, trace_key: keyOf(line) }));
  const verdict = checkTrace(trace, { unlogged: (key) => unseen.get(key) ?? 0 });
  traceStats.schedules += 1;
  traceStats.lines += verdict.lines;
  traceStats.transitions += verdict.transitions;
  traceStats.observations += verdict.observations;
  traceStats.operations += verdict.operations;
  traceStats.unlogged += verdict.unlogged;
  traceStats.allowed += verdict.allowed;
  traceStats.rejected += verdict.rejected.length;
  return verdict.rejected.map(
    (r) =>
      `transition line not allowed by the model (${r.key}): ${r.reason}: ${r.line.state_before ?? '(none)'} -> ${r.line.state_after} at attempt ${r.line.attempt_number}, outcome ${r.line.outcome_code ?? '(none)'}`,
  );
}

/** One line summing the replays of this file, for the suite's output. */
export function traceLine(): string {
  const t = traceStats;
  return (
    `trace check: ${t.lines} transition lines (${t.transitions} transitions, ${t.observations} observations) ` +
    `of ${t.operations} operations over ${t.schedules} schedules replayed against the model; ` +
    `${t.unlogged} unlogged moves bridged (${t.allowed} allowed by writes that landed unseen); ${t.rejected} rejected`
  );
}
