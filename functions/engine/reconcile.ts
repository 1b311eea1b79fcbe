import { allShards } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { errorClass } from '../domain/errors';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import type { AnyTool, ReconcileVerdict } from '../domain/tool';
import { logger } from '../observability/logger';
import { sanitize } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { backoffMs } from './record-fields';
import { enqueueQuietly, toolOf } from './stored-call';
import { toolContext, underDeadline } from './tool-invocation';
import {
  deferAttention,
  escalateToOperator,
  exhaustAttempts,
  expireApproval,
  expireLease,
  postponeCheck,
  reconcileApplied,
  reconcileNotApplied,
  requeueLater,
} from './transitions';

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
  /**
   * False when the pass stopped starting decisions because the invocation's time ran short: what it
   * did not reach stays due, and the next pass (which starts at {@link nextShard}) takes it.
   */
  complete: boolean;
  /** Where the next pass should start: the shard this one stopped in, or the one after its first. */
  nextShard: number;
}

/**
 * What a log line says of a pass: counts only (no operation IDs, arguments or results), the same for
 * the scheduled pass and an operator's pass on request.
 */
export function passLogFields(summary: ReconcileSummary, startedMs: number) {
  return {
    read: summary.read,
    pages: summary.pages,
    skipped: summary.skipped,
    actions: summary.actions,
    complete: summary.complete,
    duration_ms: Date.now() - startedMs,
  };
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
  /**
   * Only this tenant's records, read through the tenant's own unresolved index (the operators' route):
   * an operator's pass acts on, and counts, nothing of another tenant's.
   * @default every tenant, through the sharded attention index (the scheduled pass)
   */
  tenant?: string;
  /**
   * Shard to start from. Passes that run out of time always end in the last shards they reach, so
   * each pass starts where the previous one stopped, and no shard waits behind the others forever.
   * @default 0
   */
  startShard?: number;
  /** Decisions in flight at once (each may call a target's `reconcile`). @default 4 */
  parallelism?: number;
}

/** Name of the one "shard" of a tenant's pass in progress reports. */
export const TENANT_SHARD = 'tenant';

/** Decisions in flight at once, by default: a slow target delays a pass, never stalls it. */
export const DEFAULT_RECONCILE_PARALLELISM = 4;

/**
 * One reconciler pass (the contract, §7). It reads only the sparse attention GSI, shard by shard, records that
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
 * A pass has a time budget: the invocation's remaining time (`req.remainingMs`). It starts a decision
 * only while the decision's worst case (the tool's `reconcile` deadline plus a commit) and the time
 * kept for ending (`commitReserveMs`: the metrics flush and the answer) still fit, so it ends on its
 * own, having flushed what it did, rather than being killed by the Lambda timeout mid-write.
 *
 * @example
 * ```ts
 * const summary = await reconcilePass(deps, newRequest(deps, id, () => context.getRemainingTimeInMillis()));
 * console.log(summary.read, summary.actions, summary.complete);
 * ```
 */
export async function reconcilePass(
  deps: LedgerDeps,
  req: RequestContext,
  options: ReconcileOptions = {},
): Promise<ReconcileSummary> {
  const shards = options.tenant === undefined ? allShards(deps.config.attentionShards) : [TENANT_SHARD];
  const first = positiveModulo(options.startShard ?? 0, shards.length);
  const summary: ReconcileSummary = {
    read: 0,
    pages: 0,
    actions: {},
    skipped: 0,
    complete: true,
    nextShard: (first + 1) % shards.length,
  };
  const budget = passBudget(deps, req);
  for (let step = 0; step < shards.length && summary.complete; step++) {
    const index = (first + step) % shards.length;
    const shard = shards[index]!;
    const progress: ShardProgress = { shard, read: 0, acted: 0 };
    let cursor: string | undefined;
    do {
      const page =
        options.tenant === undefined
          ? await deps.store.queryAttention(shard, req.now, options.pageSize ?? 100, cursor)
          : await deps.store.queryTenantAttention(
              options.tenant,
              req.now,
              options.pageSize ?? 100,
              cursor,
              deps.config.unresolvedShards,
            );
      summary.pages += 1;
      summary.read += page.items.length;
      progress.read += page.items.length;
      const finished = await forEachBounded(
        page.items,
        options.parallelism ?? DEFAULT_RECONCILE_PARALLELISM,
        (record) => budget.fits(record),
        async (record) => {
          const action = await decide(deps, req, record, budget).catch((error: unknown) => {
            logger.error('reconcile decision failed', {
              operation_id: record.operation_id,
              error_class: errorClass(error),
            });
            return 'error';
          });
          if (action === 'skipped') summary.skipped += 1;
          else progress.acted += 1;
          summary.actions[action] = (summary.actions[action] ?? 0) + 1;
        },
      );
      if (!finished) {
        summary.complete = false;
        summary.nextShard = index;
        break;
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    options.onShard?.(progress);
  }
  // The stock of due records is known only after a whole, deployment-wide pass.
  if (summary.complete && options.tenant === undefined)
    deps.metrics.gauge(LEDGER_METRICS.unresolvedOperations, summary.read);
  deps.metrics.flush();
  return summary;
}

/** How much of the invocation is left, and whether a decision still fits in it. */
interface PassBudget {
  /** Whether the worst case of deciding `record` still fits, with the end of the pass. */
  fits(record: OperationRecord): boolean;
  /** Epoch ms by which a call to a target must be over. */
  targetDeadline(tool: AnyTool): number;
}

function passBudget(deps: LedgerDeps, req: RequestContext): PassBudget {
  const remaining = req.remainingMs;
  const reserve = deps.config.commitReserveMs;
  // A decision may call the target (under the tool's deadline), then write, then enqueue.
  const worstCase = (record: OperationRecord) => {
    const tool = toolOf(deps, record);
    const asks = record.state === 'uncertain' || record.state === 'pending';
    return (asks && tool?.reconcile ? (tool.timeoutMs ?? 10_000) : 0) + reserve;
  };
  return {
    fits: (record) => remaining === undefined || remaining() >= worstCase(record) + reserve,
    targetDeadline: (tool) => {
      const own = Date.now() + (tool.timeoutMs ?? 10_000);
      return remaining === undefined ? own : Math.min(own, Date.now() + remaining() - 2 * reserve);
    },
  };
}

/**
 * Runs `run` over `items` with at most `limit` in flight, starting each only if `canStart` says so.
 * Returns false if it stopped before starting every item (the rest is left alone).
 */
async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  canStart: (item: T) => boolean,
  run: (item: T) => Promise<void>,
): Promise<boolean> {
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < items.length) {
      const item = items[next]!;
      if (!canStart(item)) {
        stopped = true;
        return;
      }
      next += 1;
      await run(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return !stopped;
}

function positiveModulo(value: number, modulus: number): number {
  return ((Math.trunc(value) % modulus) + modulus) % modulus;
}

/** One decision for one due record; returns what was done. */
async function decide(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  budget: PassBudget,
): Promise<string> {
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
      return reconcileUncertain(deps, req, expired.record, tool, budget);
    }
    case 'uncertain':
      return reconcileUncertain(deps, req, record, tool, budget);
    case 'queued': {
      // A caller's approved operation waits for its caller: never enqueued (the contract, §14).
      if (isCallerExecuted(record)) return WAITING_FOR_CALLER;
      // A message that can never run (its tool or origin was removed) lands in the DLQ each time: back
      // off exponentially (capped at an hour) so the record is retried cheaply, never forgotten.
      const requeues = (record.requeue_count ?? 0) + 1;
      const next = req.now + Math.min(deps.config.queuedStaleMs * 2 ** (requeues - 1), 3_600_000);
      const deferred = await requeueLater(deps, req, record, next, requeues);
      if (!deferred.ok) return 'skipped';
      await enqueueQuietly(deps, record);
      return 'requeued';
    }
    case 'failed_retryable': {
      if (record.attempt >= record.max_attempts) {
        return outcome(await exhaustAttempts(deps, req, record, tool), 'attempts_exhausted');
      }
      // Attempts left: the caller's next request claims it (the contract, §14); never enqueued.
      if (isCallerExecuted(record)) return WAITING_FOR_CALLER;
      const next = req.now + backoffMs(deps.config.retryBaseMs, record.attempt + 1);
      const deferred = await requeueLater(deps, req, record, next);
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
      return outcome(await expireApproval(deps, req, record, tool), 'approval_expired');
    }
    default:
      // Terminal and needs_reconciliation records carry no attention time; nothing to do.
      return 'skipped';
  }
}

/**
 * `uncertain`: ask the target (the contract, §7). A tool without `reconcile` is retried only when the target
 * dedupes on the downstream key for these arguments; otherwise an operator decides.
 */
async function reconcileUncertain(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  budget: PassBudget,
): Promise<string> {
  if (isCallerExecuted(record)) return reconcileCallerUncertain(deps, req, record);
  if (!tool) return toOperator(deps, req, record, tool, 'tool_unregistered');
  const args = JSON.parse(record.arguments) as unknown;
  let verdict: ReconcileVerdict;
  if (tool.reconcile) {
    verdict = await askTarget(record, tool, args, budget.targetDeadline(tool));
  } else if (tool.downstreamIdempotent?.(args)) {
    // Not "known not applied": the target dedupes on the downstream key, so the next attempt with the
    // same key is safe (the contract, §7). The record remembers it (`maybe_applied`), so that if attempts run
    // out the stored error says the effect may have happened rather than "ended without the effect".
    verdict = { status: 'not_applied' };
  } else {
    return toOperator(deps, req, record, tool, 'no_reconcile');
  }
  const latency = Math.max(0, req.now - Date.parse(record.updated_at));
  if (verdict.status === 'applied') {
    const result = await reconcileApplied(deps, req, record, tool, sanitize(tool, verdict.result, args));
    if (result.ok) deps.metrics.latency(LEDGER_METRICS.reconciliationLatency, tool.name, latency);
    return outcome(result, 'reconciled_applied', deps, record);
  }
  if (verdict.status === 'not_applied') {
    const why = tool.reconcile ? 'target_says_not_applied' : 'downstream_idempotent';
    const result = await reconcileNotApplied(deps, req, record, tool, why);
    if (!result.ok) return 'skipped';
    deps.metrics.latency(LEDGER_METRICS.reconciliationLatency, tool.name, latency);
    count(deps, record, 'not_applied');
    if (result.record.attempt < result.record.max_attempts) await enqueueQuietly(deps, result.record);
    return 'reconciled_not_applied';
  }
  return unknownVerdict(deps, req, record, tool, 'reconcile_unknown');
}

/**
 * Another pass will ask again, with backoff; after `maxReconcileChecks` an operator decides, with
 * `code` saying why.
 */
async function unknownVerdict(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  code: string,
): Promise<string> {
  const checks = (record.reconcile_checks ?? 0) + 1;
  if (checks >= deps.config.maxReconcileChecks) return toOperator(deps, req, record, tool, code);
  const deferred = await postponeCheck(
    deps,
    req,
    record,
    req.now + backoffMs(deps.config.retryBaseMs, checks),
  );
  if (deferred.ok) count(deps, record, 'unknown');
  return deferred.ok ? 'reconcile_unknown' : 'skipped';
}

/** What a pass does with a caller's record that waits for its caller: nothing. */
const WAITING_FOR_CALLER = 'waiting_for_caller';

/**
 * `uncertain`, for an operation its caller executes (the contract, §14): the reconciler cannot ask the
 * target. Declared downstream-idempotent: `failed_retryable` (the next attempt reuses the downstream
 * key; `maybe_applied`), never enqueued, its caller claims it. Otherwise each pass counts an unknown
 * with the usual backoff, which gives the caller time to post its verdict, and then an operator
 * decides (`no_caller_verdict`).
 */
async function reconcileCallerUncertain(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
): Promise<string> {
  if (record.policy?.downstream_idempotent) {
    const result = await reconcileNotApplied(deps, req, record, undefined, 'downstream_idempotent');
    if (!result.ok) return 'skipped';
    count(deps, record, 'not_applied');
    return 'reconciled_not_applied';
  }
  return unknownVerdict(deps, req, record, undefined, 'no_caller_verdict');
}

async function askTarget(
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  deadlineAt: number,
): Promise<ReconcileVerdict> {
  const identity = {
    tenant: record.tenant,
    operationId: record.operation_id,
    reservationId: record.reservation_id,
    toolName: record.tool,
    attempt: record.attempt,
  };
  try {
    // The same hard deadline as an attempt (never past the pass's own): no answer in time is `unknown`.
    const verdict = await underDeadline(deadlineAt, Date.now, (signal) =>
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
  const result = await escalateToOperator(deps, req, record, tool, code);
  if (result.ok) deps.metrics.count(LEDGER_METRICS.needsReconciliation, record.tool);
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
  deps.metrics.count(LEDGER_METRICS.reconciliations, record.tool, 1, outcomeName);
}
