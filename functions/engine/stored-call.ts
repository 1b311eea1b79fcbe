import type { OperationRecord } from '../domain/operation';
import type { AnyTool } from '../domain/tool';
import { logger } from '../observability/logger';
import type { LedgerDeps } from './ledger-deps';
import { notAfterFor } from './not-after';
import type { WorkMessage } from './work-queue';

/**
 * What the engine rebuilds from a stored record to carry its call on later: the tool it names and the
 * work message that runs it again. The decisions that re-arm a record (an approval, the reconciler,
 * an operator's `not_applied`) and local mode's start-up all send it the same way.
 */

/**
 * Sends the work message for a record. A failed send is logged, not thrown: the record is durable,
 * and the reconciler re-enqueues `queued` records that were not started (SPEC §7).
 */
export async function enqueueQuietly(deps: LedgerDeps, record: OperationRecord): Promise<boolean> {
  try {
    await deps.queue.enqueue(workMessageFor(record, deps.clock()));
    return true;
  } catch (error) {
    logger.warn('enqueue failed; the reconciler will enqueue again', {
      operation_id: record.operation_id,
      error_class: error instanceof Error ? error.name : typeof error,
    });
    return false;
  }
}

/**
 * The work message that re-creates a record's call (same operation ID, same arguments), sent at `now`:
 * its `not_after` keeps a redriven copy from outliving the record (engine/not-after.ts).
 */
export function workMessageFor(record: OperationRecord, now: number): WorkMessage {
  const message: WorkMessage = {
    operation_id: record.operation_id,
    tenant: record.tenant,
    tool: record.tool,
    arguments: JSON.parse(record.arguments),
    not_after: notAfterFor(record, now),
  };
  if (record.agent_run_id !== undefined) message.agent_run_id = record.agent_run_id;
  return message;
}

/** The tool of a stored record, if still registered (reconciler and operator paths). */
export function toolOf(deps: LedgerDeps, record: OperationRecord): AnyTool | undefined {
  return deps.tools.find(record.tool);
}
