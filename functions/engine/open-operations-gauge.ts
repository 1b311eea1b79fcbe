import { ScanCommand, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { UNRESOLVED_INDEX } from '../ledger/keys';
import type { LedgerDeps } from './ledger-deps';

/**
 * The current stock of unresolved operations, for alarms that must stay in ALARM while an operation is
 * stuck. A count of transitions (`NeedsReconciliation`, one per move) returns to OK five minutes after
 * the move although the operation is still waiting for a person; this gauge reads what is there now.
 *
 * It scans the sparse `unresolved` index, which holds unresolved records alone, reading only `state`:
 * the cost grows with the unresolved operations, never with the table (SPEC §7), and the reconciler
 * runs it once per pass. Zeros are emitted too, so the alarm returns to OK when the last one is resolved.
 */

/** What one count found. */
export interface OpenOperations {
  /** Every unresolved record (awaiting_approval, queued, pending, uncertain, failed_retryable, needs_reconciliation). */
  unresolved: number;
  /** Records in `needs_reconciliation`: waiting for an operator. */
  needsReconciliation: number;
}

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
  const counts: OpenOperations = { unresolved: 0, needsReconciliation: 0 };
  let start: ScanCommandOutput['LastEvaluatedKey'];
  do {
    const page = await deps.store.client.send(
      new ScanCommand({
        TableName: deps.store.tableName,
        IndexName: UNRESOLVED_INDEX,
        ProjectionExpression: '#state',
        ExpressionAttributeNames: { '#state': 'state' },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      counts.unresolved += 1;
      if (item.state?.S === 'needs_reconciliation') counts.needsReconciliation += 1;
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  deps.metrics.gauge('OpenUnresolved', counts.unresolved);
  deps.metrics.gauge('OpenNeedsReconciliation', counts.needsReconciliation);
  return counts;
}
