/**
 * The metrics the handlers emit (CloudWatch EMF) and the alarms and dashboard read: one name per
 * signal of the contract's §9. The engine records them through functions/observability/metrics.ts; the construct's
 * alarms and dashboard (lib/monitoring.ts) refer to the same entries. Pure data.
 *
 * Every data point is emitted with the `service` dimension alone (what alarms read) and once more with
 * `tool` (and `outcome`, for reconciliations) for the dashboard.
 */

/** CloudWatch namespace of every ledger metric (`POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = 'ToolLedger';

/** The metric names, by what they count. */
export const LEDGER_METRICS = {
  /** Attempts 1 that ran the effect (a fresh operation, not a replay). */
  firstExecutions: 'FirstExecutions',
  /** Requests answered from a stored terminal outcome. */
  replays: 'Replays',
  /** The same operation ID with other arguments (`idempotency_key_reused`). */
  conflicts: 'Conflicts',
  /** Requests refused while a worker held a live lease. */
  inProgressRejections: 'InProgressRejections',
  /** Attempts whose outcome is unknown. */
  uncertainOutcomes: 'UncertainOutcomes',
  /** Outcomes of superseded attempts, kept as `late_outcome`. */
  lateOutcomes: 'LateOutcomes',
  /** Reconciler decisions, by `outcome`. */
  reconciliations: 'Reconciliations',
  /**
   * Due records a deployment-wide pass read, emitted by every scheduled pass: exact for a whole pass, a
   * lower bound for one that stopped early (see `incompletePasses`).
   */
  unresolvedOperations: 'UnresolvedOperations',
  /**
   * Gauge emitted by every scheduled pass: 1 when it did not reach every due record (out of time even
   * for quick decisions), 0 when it did. Records deferred for a slow `reconcile` were reached.
   */
  incompletePasses: 'IncompleteReconcilePasses',
  /** Moves into `needs_reconciliation` (a count of transitions). */
  needsReconciliation: 'NeedsReconciliation',
  /** From an uncertain outcome to the reconciler's verdict, ms. */
  reconciliationLatency: 'ReconciliationLatency',
  /**
   * Gauges of the current stock, emitted after every reconciler pass (zero included), so an alarm on
   * them stays in ALARM for as long as an operation is stuck.
   */
  openUnresolved: 'OpenUnresolved',
  /** Gauge: records waiting for an operator now. */
  openNeedsReconciliation: 'OpenNeedsReconciliation',
} as const;

/** One metric name. */
export type LedgerMetricName = (typeof LEDGER_METRICS)[keyof typeof LEDGER_METRICS];
