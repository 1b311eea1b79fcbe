import { allShards } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { errorClass } from '../domain/errors';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import { boundPolicy } from '../domain/policy';
import { type AnyTool, type ReconcileVerdict, reconcileTimeoutOf } from '../domain/tool';
import { logger } from '../observability/logger';
import { inOperationSpan, inSpan, SpanKind } from '../observability/tracing';
import { sanitize } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { backoffMs } from './record-fields';
import { enqueueQuietly, toolOf } from './stored-call';
import { toolContext, underDeadline } from './tool-invocation';
import {
  deferAttention,
  deferDecision,
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
   * Records whose decision no longer fitted the pass's remaining time (a slow `reconcile`): deferred
   * with backoff by a scheduled pass, left for the schedule by an operator's pass. Either way the pass
   * moved on to the next record.
   */
  deferred: number;
  /**
   * False when the pass did not reach every due record: it ran out of time even for the quick
   * decisions (what it did not reach stays due, and the next pass, which starts at {@link nextShard},
   * takes it), or, in an operator's pass, it left records for the scheduled pass.
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
    deferred: summary.deferred,
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
  /** Decisions in flight at once (each may call a target's `reconcile`). @default `config.reconcileParallelism` */
  parallelism?: number;
  /**
   * What the pass does with a record whose decision no longer fits its remaining time: `defer` writes
   * a later attention time (with backoff), so the next pass starts behind the records due before it
   * (the scheduled pass); `leave` leaves the record as it is for the scheduled pass (an operator's pass,
   * which must not delay the schedule). Either way the pass moves on to the next record.
   * @default 'defer'
   */
  outOfTime?: 'defer' | 'leave';
  /**
   * Time kept back at the end of the invocation beyond the commit reserve: the pass starts no decision
   * it could not end this long before the invocation would (see functions/contract/time-budget.ts),
   * so a pass kept busy by a backlog never looks like a handler about to time out.
   * @default 0
   */
  holdBackMs?: number;
  /**
   * The whole time of the invocation the pass runs in, ms, had it started at its beginning: a check
   * whose worst case exceeds what a pass of such an invocation could give it can never be decided by
   * waiting, and goes to an operator instead of being deferred forever.
   * @default the remaining time when the pass starts
   */
  invocationMs?: number;
}

/** Name of the one "shard" of a tenant's pass in progress reports. */
export const TENANT_SHARD = 'tenant';

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
 * A pass has a time budget: the invocation's remaining time (`req.remainingMs`) less `holdBackMs`. A
 * pass never stalls on one record (the contract, §7). Each due record is admitted by one rule
 * (`PassBudget.admit`): its decision starts only while the decision's worst case (the tool's `reconcile`
 * deadline plus a commit) and the time kept for ending (`commitReserveMs`: the metrics flush and the
 * answer) still fit; a record whose worst case no longer fits is deferred with backoff (or left, in an
 * operator's pass) and the pass moves on to the next one, in the same shard and the next; only when
 * not even a quick decision fits does the pass stop, flushed, rather than being killed by the Lambda
 * timeout mid-write. One slow tool therefore holds back neither other records, shards nor tenants.
 *
 * @example
 * ```ts
 * const summary = await reconcilePass(deps, newRequest(deps, id, () => context.getRemainingTimeInMillis()));
 * console.log(summary.read, summary.actions, summary.complete);
 * ```
 */
export function reconcilePass(
  deps: LedgerDeps,
  req: RequestContext,
  options: ReconcileOptions = {},
): Promise<ReconcileSummary> {
  // One span per pass; each record it decides gets an operation span of its own beneath.
  return inSpan('tool_ledger.reconcile_pass', { kind: SpanKind.INTERNAL }, async (span) => {
    const summary = await runPass(deps, req, options);
    span.setAttributes({
      'tool_ledger.pass.read': summary.read,
      'tool_ledger.pass.deferred': summary.deferred,
      'tool_ledger.pass.complete': summary.complete,
    });
    return summary;
  });
}

async function runPass(
  deps: LedgerDeps,
  req: RequestContext,
  options: ReconcileOptions,
): Promise<ReconcileSummary> {
  const shards = options.tenant === undefined ? allShards(deps.config.attentionShards) : [TENANT_SHARD];
  const first = positiveModulo(options.startShard ?? 0, shards.length);
  const summary: ReconcileSummary = {
    read: 0,
    pages: 0,
    actions: {},
    skipped: 0,
    deferred: 0,
    complete: true,
    nextShard: (first + 1) % shards.length,
  };
  const budget = passBudget(deps, req, options.holdBackMs ?? 0, options.invocationMs);
  const outOfTime = options.outOfTime ?? 'defer';
  let stopped = false;
  for (let step = 0; step < shards.length && !stopped; step++) {
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
        options.parallelism ?? deps.config.reconcileParallelism,
        (record) => budget.admit(record),
        async (record, admission) => {
          const action = await inOperationSpan('reconcile', undefined, () =>
            handle(deps, req, record, admission, budget, outOfTime),
          ).catch((error: unknown) => {
            logger.error('reconcile decision failed', {
              operation_id: record.operation_id,
              error_class: errorClass(error),
            });
            return 'error';
          });
          if (action === 'skipped') summary.skipped += 1;
          else if (action === DEFERRED_FOR_TIME || action === LEFT_FOR_SCHEDULE) summary.deferred += 1;
          else progress.acted += 1;
          if (action === LEFT_FOR_SCHEDULE) summary.complete = false;
          summary.actions[action] = (summary.actions[action] ?? 0) + 1;
        },
      );
      if (!finished) {
        stopped = true;
        summary.complete = false;
        summary.nextShard = index;
        break;
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    options.onShard?.(progress);
  }
  if (options.tenant === undefined) {
    // Every scheduled pass reports the backlog it saw, a whole pass included or not: the due records
    // it read (a lower bound when it stopped early, which a "too many" alarm can only under-report),
    // and whether it reached them all. Reporting on every pass keeps the alarms from going blind just
    // when passes cannot finish.
    deps.metrics.gauge(LEDGER_METRICS.unresolvedOperations, summary.read);
    deps.metrics.gauge(LEDGER_METRICS.incompletePasses, summary.complete ? 0 : 1);
  }
  deps.metrics.flush();
  return summary;
}

/** The action of a record deferred (with backoff) because its decision no longer fitted the pass. */
export const DEFERRED_FOR_TIME = 'deferred_for_time';

/** The action of a record an operator's pass left for the scheduled pass, for the same reason. */
export const LEFT_FOR_SCHEDULE = 'left_for_schedule';

/**
 * One due record, whatever its kind: the one place a pass decides what happens to it. Admitted, it is
 * decided ({@link decide}); out of time, it is deferred or left, and the pass goes on.
 */
async function handle(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  admission: Exclude<Admission, 'stop'>,
  budget: PassBudget,
  outOfTime: 'defer' | 'leave',
): Promise<string> {
  if (admission === 'decide') return decide(deps, req, record, budget);
  if (outOfTime === 'leave') return LEFT_FOR_SCHEDULE;
  if (admission === 'never_fits') return tooSlowForAnyPass(deps, req, record);
  const deferrals = (record.reconcile_deferrals ?? 0) + 1;
  const result = await deferDecision(
    deps,
    req,
    record,
    req.now + backoffMs(deps.config.retryBaseMs, deferrals),
  );
  if (!result.ok) return 'skipped';
  logger.warn('reconcile decision deferred', {
    operation_id: record.operation_id,
    tool_name: record.tool,
    deferrals,
  });
  count(deps, record, DEFERRED_FOR_TIME);
  return DEFERRED_FOR_TIME;
}

/**
 * A record whose check cannot fit even a whole pass (the construct refuses such a tool at synth; a
 * deployment that bypasses the check, or local mode with a slow tool, can still have one): deferring
 * it would only hide it, so it goes to an operator (`reconcile_too_slow`), its lease expired first if
 * it was still `pending`.
 */
async function tooSlowForAnyPass(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
): Promise<string> {
  const tool = toolOf(deps, record);
  let current = record;
  if (record.state === 'pending') {
    const expired = await expireLease(deps, req, record, tool);
    if (!expired.ok) return 'skipped';
    count(deps, record, 'lease_expired');
    current = expired.record;
  }
  logger.warn('reconcile check longer than a pass', {
    operation_id: record.operation_id,
    tool_name: record.tool,
  });
  return toOperator(deps, req, current, tool, 'reconcile_too_slow');
}

/**
 * What a pass may still do with a record: `decide` it (its worst case fits), nothing but defer it
 * (`out_of_time`: a quick write still fits, its decision does not), hand it on because its decision
 * could not fit even a whole pass (`never_fits`), or nothing at all (`stop`).
 */
type Admission = 'decide' | 'out_of_time' | 'never_fits' | 'stop';

/** How much of the invocation is left, and what still fits in it. */
interface PassBudget {
  /** The rule every due record goes through, whatever its state. */
  admit(record: OperationRecord): Admission;
  /** Epoch ms by which a call to a target must be over. */
  targetDeadline(tool: AnyTool): number;
}

function passBudget(
  deps: LedgerDeps,
  req: RequestContext,
  holdBackMs: number,
  invocationMs: number | undefined,
): PassBudget {
  const remaining = req.remainingMs;
  const reserve = deps.config.commitReserveMs;
  // Time the pass may still spend, keeping `reserve` for its end (the flush, the answer).
  const left = () =>
    remaining === undefined ? Number.POSITIVE_INFINITY : remaining() - holdBackMs - reserve;
  // The most any pass of this invocation could give one decision.
  const whole = invocationMs === undefined ? left() : invocationMs - holdBackMs - reserve;
  return {
    admit: (record) => {
      const time = left();
      if (time < reserve) return 'stop';
      const need = worstCase(deps, req, record);
      if (time >= need) return 'decide';
      return need > whole ? 'never_fits' : 'out_of_time';
    },
    targetDeadline: (tool) => {
      const own = Date.now() + reconcileTimeoutOf(tool);
      return remaining === undefined ? own : Math.min(own, Date.now() + left() - reserve);
    },
  };
}

/**
 * The longest a decision on `record` can take: a call to the target under the tool's `reconcile`
 * deadline where the decision asks it, then a commit (and an enqueue) within the commit reserve.
 */
function worstCase(deps: LedgerDeps, req: RequestContext, record: OperationRecord): number {
  const reserve = deps.config.commitReserveMs;
  const tool = toolOf(deps, record);
  const asks =
    record.state === 'uncertain' || (record.state === 'pending' && (record.lease_expires_at ?? 0) < req.now);
  return (asks && tool?.reconcile ? reconcileTimeoutOf(tool) : 0) + reserve;
}

/**
 * Runs `run` over `items` with at most `limit` in flight, each with what `admit` said of it when its
 * turn came; an item `admit` answers `stop` for ends the run (it and the rest are left alone).
 * Returns false if it stopped before starting every item.
 */
async function forEachBounded<T, A extends string>(
  items: readonly T[],
  limit: number,
  admit: (item: T) => A | 'stop',
  run: (item: T, admission: A) => Promise<void>,
): Promise<boolean> {
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < items.length) {
      const item = items[next]!;
      const admission = admit(item);
      if (admission === 'stop') {
        stopped = true;
        return;
      }
      next += 1;
      await run(item, admission as A);
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
      if (record.attempt >= boundPolicy(record, tool).max_attempts) {
        const exhausted = await exhaustAttempts(deps, req, record, tool);
        if (exhausted.ok && exhausted.record.state === 'needs_reconciliation') {
          deps.metrics.count(LEDGER_METRICS.needsReconciliation, record.tool);
          return outcome(exhausted, 'needs_reconciliation', deps, record);
        }
        return outcome(exhausted, 'attempts_exhausted');
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
 * dedupes on the downstream key for these arguments, as the operation's bound policy says (the tool's
 * answer at reservation, functions/domain/policy.ts); otherwise an operator decides.
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
  } else if (boundPolicy(record, tool).downstream_idempotent) {
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
    if (result.record.attempt < boundPolicy(result.record, tool).max_attempts)
      await enqueueQuietly(deps, result.record);
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
  if (boundPolicy(record, undefined).downstream_idempotent) {
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
