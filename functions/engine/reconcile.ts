import { errorClass } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import type { AnyTool, ReconcileVerdict } from '../domain/tool';
import { allShards } from '../ledger/keys';
import { logger } from '../observability/logger';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { backoffMs } from './record-fields';
import { sanitize } from './run-attempt';
import { enqueueQuietly, toolOf } from './submit-operation';
import { toolContext, underDeadline } from './tool-invocation';
import { changeState, deferAttention, exhaustAttempts, expireLease } from './transitions';

/** What one pass did, for the CLI's progress lines and for tests. */
export interface ReconcileSummary {
  /** Items DynamoDB returned across all shards (the cost of the pass). */
  read: number;
  /** Query pages fetched. */
  pages: number;
  /** Decisions by kind (`expired_lease`, `reconciled_applied`, `requeued`, …). */
  actions: Record<string, number>;
  /** Records whose conditional write lost to another writer (another reconciler, a late commit). */
  skipped: number;
}

/** Per-shard progress, reported as the pass goes. */
export interface ShardProgress {
  shard: string;
  read: number;
  acted: number;
}

/** Options of a pass. */
export interface ReconcileOptions {
  /** Records per query page. @default 100 */
  pageSize?: number;
  /** Called once per shard when it is done. */
  onShard?: (progress: ShardProgress) => void;
}

/**
 * One reconciler pass (SPEC §7). It reads only the sparse attention GSI, shard by shard, records that
 * are due (`attention_at <= now`), so its cost grows with the operations that need attention, never
 * with the table. Every decision is a conditional write naming the state and attempt it saw, so two
 * passes running at once never double-act. It never calls `execute`.
 *
 * ```
 *  pending (lease expired) ─▶ uncertain ─▶ tool.reconcile ─┬ applied ─────▶ succeeded (reconciled)
 *                                                          ├ not_applied ─▶ failed_retryable ─▶ enqueue
 *                                                          └ unknown ─────▶ ask again (backoff) … needs_reconciliation
 *  queued (stale) ─▶ enqueue again      failed_retryable ─▶ enqueue (backoff) | failed_terminal (exhausted)
 *  awaiting_approval (deadline passed) ─▶ rejected
 * ```
 *
 * @example
 * ```ts
 * const summary = await reconcilePass(deps, newRequest(deps));
 * console.log(summary.read, summary.actions);
 * ```
 */
export async function reconcilePass(
  deps: LedgerDeps,
  req: RequestContext,
  options: ReconcileOptions = {},
): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { read: 0, pages: 0, actions: {}, skipped: 0 };
  for (const shard of allShards(deps.config.attentionShards)) {
    const progress: ShardProgress = { shard, read: 0, acted: 0 };
    let cursor: string | undefined;
    do {
      const page = await deps.store.queryAttention(shard, req.now, options.pageSize ?? 100, cursor);
      summary.pages += 1;
      summary.read += page.items.length;
      progress.read += page.items.length;
      for (const record of page.items) {
        const action = await decide(deps, req, record).catch((error: unknown) => {
          logger.error('reconcile decision failed', {
            operation_id: record.operation_id,
            error_class: errorClass(error),
          });
          return 'error';
        });
        if (action === 'skipped') summary.skipped += 1;
        else progress.acted += 1;
        summary.actions[action] = (summary.actions[action] ?? 0) + 1;
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    options.onShard?.(progress);
  }
  deps.metrics.gauge('UnresolvedOperations', summary.read);
  deps.metrics.flush();
  return summary;
}

/** One decision for one due record; returns what was done. */
async function decide(deps: LedgerDeps, req: RequestContext, record: OperationRecord): Promise<string> {
  const tool = toolOf(deps, record);
  switch (record.state) {
    case 'pending': {
      if ((record.lease_expires_at ?? 0) >= req.now) {
        return outcome(
          await deferAttention(deps, req, record, record.lease_expires_at ?? req.now),
          'deferred',
        );
      }
      const expired = await expireLease(deps, req, record, tool);
      if (!expired.ok) return 'skipped';
      count(deps, record, 'lease_expired');
      return reconcileUncertain(deps, req, expired.record, tool);
    }
    case 'uncertain':
      return reconcileUncertain(deps, req, record, tool);
    case 'queued': {
      // A message that can never run (its tool or origin was removed) lands in the DLQ each time: back
      // off exponentially (capped at an hour) so the record is retried cheaply, never forgotten.
      const requeues = (record.requeue_count ?? 0) + 1;
      const next = req.now + Math.min(deps.config.queuedStaleMs * 2 ** (requeues - 1), 3_600_000);
      const deferred = await deferAttention(deps, req, record, next, { requeue_count: requeues });
      if (!deferred.ok) return 'skipped';
      await enqueueQuietly(deps, record);
      return 'requeued';
    }
    case 'failed_retryable': {
      if (record.attempt >= record.max_attempts) {
        return outcome(await exhaustAttempts(deps, req, record, tool), 'attempts_exhausted');
      }
      const next = req.now + backoffMs(deps.config.retryBaseMs, record.attempt + 1);
      const deferred = await deferAttention(deps, req, record, next);
      if (!deferred.ok) return 'skipped';
      await enqueueQuietly(deps, record);
      return 'requeued';
    }
    case 'awaiting_approval': {
      if ((record.approval_deadline ?? 0) > req.now) {
        return outcome(
          await deferAttention(deps, req, record, record.approval_deadline ?? req.now),
          'deferred',
        );
      }
      const result = await changeState(deps, req, record, tool, {
        transition: 'expire_approval',
        expect: { states: ['awaiting_approval'], attempt: record.attempt },
        to: 'rejected',
        code: 'approval_expired',
        set: { error: { code: 'approval_expired', message: 'no approval was given before the deadline' } },
      });
      return outcome(result, 'approval_expired');
    }
    default:
      // Terminal and needs_reconciliation records carry no attention time; nothing to do.
      return 'skipped';
  }
}

/**
 * `uncertain`: ask the target (SPEC §7). A tool without `reconcile` is retried only when the target
 * dedupes on the downstream key for these arguments; otherwise an operator decides.
 */
async function reconcileUncertain(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
): Promise<string> {
  if (!tool) return toOperator(deps, req, record, tool, 'tool_unregistered');
  const args = JSON.parse(record.arguments) as unknown;
  let verdict: ReconcileVerdict;
  if (tool.reconcile) {
    verdict = await askTarget(record, tool, args);
  } else if (tool.downstreamIdempotent?.(args)) {
    // Not "known not applied": the target dedupes on the downstream key, so the next attempt with the
    // same key is safe (SPEC §7). The record remembers it (`maybe_applied`), so that if attempts run
    // out the stored error says the effect may have happened rather than "ended without the effect".
    verdict = { status: 'not_applied' };
  } else {
    return toOperator(deps, req, record, tool, 'no_reconcile');
  }
  const latency = Math.max(0, req.now - Date.parse(record.updated_at));
  if (verdict.status === 'applied') {
    const { json, code } = sanitize(tool, verdict.result, args);
    const result = await changeState(deps, req, record, tool, {
      transition: 'reconcile',
      expect: { states: ['uncertain'], attempt: record.attempt },
      to: 'succeeded',
      code: code === 'succeeded' ? 'reconciled_applied' : code,
      set: { result: json, reconciled: true },
    });
    if (result.ok) deps.metrics.latency('ReconciliationLatency', tool.name, latency);
    return outcome(result, 'reconciled_applied', deps, record);
  }
  if (verdict.status === 'not_applied') {
    const result = await changeState(deps, req, record, tool, {
      transition: 'reconcile',
      expect: { states: ['uncertain'], attempt: record.attempt },
      to: 'failed_retryable',
      code: tool.reconcile ? 'reconciled_not_applied' : 'downstream_idempotent_retry',
      set: tool.reconcile ? { reconciled: true } : { reconciled: true, maybe_applied: true },
    });
    if (!result.ok) return 'skipped';
    deps.metrics.latency('ReconciliationLatency', tool.name, latency);
    count(deps, record, 'not_applied');
    if (result.record.attempt < result.record.max_attempts) await enqueueQuietly(deps, result.record);
    return 'reconciled_not_applied';
  }
  const checks = (record.reconcile_checks ?? 0) + 1;
  if (checks >= deps.config.maxReconcileChecks)
    return toOperator(deps, req, record, tool, 'reconcile_unknown');
  const deferred = await deferAttention(
    deps,
    req,
    record,
    req.now + backoffMs(deps.config.retryBaseMs, checks),
    { reconcile_checks: checks },
    { reconcileChecks: record.reconcile_checks ?? 0 },
  );
  if (deferred.ok) count(deps, record, 'unknown');
  return deferred.ok ? 'reconcile_unknown' : 'skipped';
}

async function askTarget(record: OperationRecord, tool: AnyTool, args: unknown): Promise<ReconcileVerdict> {
  const identity = {
    tenant: record.tenant,
    operationId: record.operation_id,
    reservationId: record.reservation_id,
    toolName: record.tool,
    attempt: record.attempt,
  };
  try {
    // The same hard deadline as an attempt: a target that does not answer in time is `unknown`.
    const verdict = await underDeadline(Date.now() + (tool.timeoutMs ?? 10_000), Date.now, (signal) =>
      tool.reconcile!(args, toolContext(identity, signal)),
    );
    return verdict.status === 'applied' || verdict.status === 'not_applied' ? verdict : { status: 'unknown' };
  } catch (error) {
    logger.warn('reconcile check failed', {
      operation_id: record.operation_id,
      error_class: errorClass(error),
    });
    return { status: 'unknown' };
  }
}

async function toOperator(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  code: string,
): Promise<string> {
  const result = await changeState(deps, req, record, tool, {
    transition: 'reconcile',
    expect: { states: ['uncertain'], attempt: record.attempt },
    to: 'needs_reconciliation',
    code,
  });
  if (result.ok) deps.metrics.count('NeedsReconciliation', record.tool);
  return outcome(result, 'needs_reconciliation', deps, record);
}

function outcome(
  result: { ok: boolean },
  action: string,
  deps?: LedgerDeps,
  record?: OperationRecord,
): string {
  if (!result.ok) return 'skipped';
  if (deps && record) count(deps, record, action);
  return action;
}

function count(deps: LedgerDeps, record: OperationRecord, outcomeName: string): void {
  deps.metrics.count('Reconciliations', record.tool, 1, outcomeName);
}
