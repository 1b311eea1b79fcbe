import { LEDGER_METRICS } from '../contract/metrics';
import type { LedgerDeps } from './ledger-deps';
import type { OpenOperations } from './operation-store';

/**
 * The current stock of unresolved operations, for alarms that must stay in ALARM while an operation is
 * stuck. A count of transitions (`NeedsReconciliation`, one per move) returns to OK five minutes after
 * the move although the operation is still waiting for a person; this gauge reads what is there now.
 *
 * The store counts the sparse `unresolved` index, which holds unresolved records alone: the cost grows
 * with the unresolved operations, never with the table (SPEC §7), and the reconciler runs it once per
 * pass. Zeros are emitted too, so the alarm returns to OK when the last one is resolved.
 */

/**
 * Counts the unresolved index and records the `OpenUnresolved` and `OpenNeedsReconciliation` gauges
 * (flushed with the pass's other metrics).
 *
 * @example
 * ```ts
 * await reconcilePass(deps, req);
 * await recordOpenOperations(deps);
 * deps.metrics.flush();
 * ```
 */
export async function recordOpenOperations(deps: LedgerDeps): Promise<OpenOperations> {
  const counts = await deps.store.countOpen();
  deps.metrics.gauge(LEDGER_METRICS.openUnresolved, counts.unresolved);
  deps.metrics.gauge(LEDGER_METRICS.openNeedsReconciliation, counts.needsReconciliation);
  return counts;
}
