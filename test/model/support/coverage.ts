import { faultStats } from './process-faults';

/**
 * What the model exercised across a run of the suite, printed at the end so that a reviewer can see
 * that crashes, lost responses, late outcomes and operator resolutions really happened.
 */
export const coverage = {
  schedules: 0,
  operations: 0,
  finalStates: {} as Record<string, number>,
  /** Final states by tool kind. */
  byKind: {} as Record<string, Record<string, number>>,
  reconciled: 0,
  resolved: 0,
  lateOutcomes: 0,
  maxRounds: 0,
};

/** One line summarising the coverage, for the suite's output. */
export function coverageLine(): string {
  const states = Object.entries(coverage.finalStates)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([state, n]) => `${state}=${n}`)
    .join(' ');
  return (
    `model: ${coverage.schedules} schedules, ${coverage.operations} operations; final ${states}; ` +
    `reconciled=${coverage.reconciled} resolved=${coverage.resolved} late_outcomes=${coverage.lateOutcomes}; ` +
    `crashes=${faultStats.crashes} throttled=${faultStats.throttled} lost_responses=${faultStats.lost} ` +
    `queue_down=${faultStats.queueDown} stalls=${faultStats.stalls}; max final-drive rounds=${coverage.maxRounds}\n` +
    Object.entries(coverage.byKind)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, states]) => `  ${kind}: ${JSON.stringify(states)}`)
      .join('\n')
  );
}
