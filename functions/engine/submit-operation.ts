import { operationKey } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { IdempotencyConflictError } from '../domain/errors';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import { isTerminal } from '../domain/states';
import type { AnyTool } from '../domain/tool';
import { logger } from '../observability/logger';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { type PreparedCall, prepareCall } from './prepare-call';
import { backoffMs } from './record-fields';
import { runAttempt } from './run-attempt';
import { enqueueQuietly } from './stored-call';
import type { SubmitResult } from './submit-result';
import {
  type Caller,
  claim,
  exhaustAttempts,
  type Lease,
  logObservation,
  newLease,
  reserve,
} from './transitions';

/**
 * The read-tool path, loaded by the first read and kept: an `import()` is resolved again at every call
 * where modules are not bundled (local mode runs on tsx, where that costs close to a millisecond).
 */
let readToolPath: Promise<typeof import('./read-tool-path')> | undefined;

/** How a call wants to be served. */
export type SubmitMode =
  /** An HTTP caller waiting for the outcome (runs now if the tool fits the sync budget). */
  | 'sync'
  /** An HTTP caller that asked `Prefer: respond-async`: reserve, enqueue, answer 202. */
  | 'async'
  /** The executor handling a work-queue message: runs now, claiming a queued record. */
  | 'worker';

/** One tool call as a front door hands it to the engine. */
export interface SubmitRequest extends Caller {
  operationId: unknown;
  tool: unknown;
  arguments: unknown;
  mode: SubmitMode;
}

/**
 * The flow of one call (the contract, §3): validate and digest, reserve, then replay, conflict, report, or run
 * the tool once and record its outcome.
 *
 * @example
 * ```ts
 * const out = await submitOperation(deps, newRequest(deps), {
 *   tenant: 'acme', principal: 'agent-1', operationId: 'run-42-step-3',
 *   tool: 'workspace.write_file', arguments: { path: 'a.txt', content: 'hi' }, mode: 'sync',
 * });
 * if (out.kind === 'completed') console.log(out.record.state, out.replayed);
 * ```
 */
export async function submitOperation(
  deps: LedgerDeps,
  req: RequestContext,
  request: SubmitRequest,
): Promise<SubmitResult> {
  const call = prepareCall(deps.tools, request.operationId, request.tool, request.arguments);
  const caller: Caller = { tenant: request.tenant, principal: request.principal };
  if (request.agentRunId !== undefined) caller.agentRunId = request.agentRunId;
  if (call.tool.effect === 'read') {
    // Powertools idempotency and its JMESPath engine are loaded by the first read: deployments whose
    // tools all write never load them.
    readToolPath ??= import('./read-tool-path');
    const { submitReadOperation } = await readToolPath;
    return submitReadOperation(deps, req, call, caller);
  }
  const cached = deps.cache.get(operationKey(request.tenant, call.operationId).pk, req.now);
  if (cached) return existingRecord(deps, req, call, cached, request.mode);

  // A tool whose timeout does not fit the synchronous budget always runs asynchronously (the contract, §3).
  const tooLong = request.mode === 'sync' && (call.tool.timeoutMs ?? 10_000) > deps.config.syncWaitMs;
  const mode: SubmitMode = tooLong ? 'async' : request.mode;
  const runsLater = mode === 'async';
  if (call.tool.requiresApproval) {
    const reservation = await reserve(deps, req, call, caller, 'awaiting_approval');
    if (reservation.created) return accepted(deps, reservation.record, false);
    return existingRecord(deps, req, call, reservation.existing, mode);
  }
  if (runsLater) {
    const reservation = await reserve(deps, req, call, caller, 'queued');
    if (reservation.created) {
      await enqueueQuietly(deps, reservation.record);
      return accepted(deps, reservation.record, false);
    }
    return existingRecord(deps, req, call, reservation.existing, mode);
  }
  const lease = newLease(deps, req, call.tool);
  const reservation = await reserve(deps, req, call, caller, 'pending', lease);
  if (reservation.created) return run(deps, req, call, reservation.record, lease);
  return existingRecord(deps, req, call, reservation.existing, mode);
}

/** The contract's §3, step 4: a record exists. */
async function existingRecord(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  record: OperationRecord,
  mode: SubmitMode,
  depth = 0,
): Promise<SubmitResult> {
  const tool = call.tool;
  if (record.arguments_digest !== call.digest) {
    deps.metrics.count(LEDGER_METRICS.conflicts, tool.name);
    logObservation(deps, req, record, tool, 'idempotency_key_reused', false);
    throw new IdempotencyConflictError(record.operation_id, record.arguments_digest);
  }
  if (isTerminal(record.state)) {
    deps.cache.put(record);
    deps.metrics.count(LEDGER_METRICS.replays, tool.name);
    logObservation(deps, req, record, tool, 'replayed', true);
    return { kind: 'completed', record, replayed: true };
  }
  if (isCallerExecuted(record)) {
    // Its caller executes it (the contract, §14): whatever the deployment registers under that name
    // now, the ledger never claims or runs it, and never sends it down another path. Reported as it stands.
    return reportOnly(deps, req, record, tool);
  }
  const claimable = record.state === 'failed_retryable' || (record.state === 'queued' && mode === 'worker');
  if (claimable && depth < 2) {
    if (record.state === 'failed_retryable' && record.attempt >= record.max_attempts) {
      const exhausted = await exhaustAttempts(deps, req, record, tool);
      if (exhausted.ok) return { kind: 'completed', record: exhausted.record, replayed: false };
      return exhausted.current
        ? existingRecord(deps, req, call, exhausted.current, mode, depth + 1)
        : gone(record);
    }
    if (mode === 'async') {
      await enqueueQuietly(deps, record);
      return accepted(deps, record, false);
    }
    const lease = newLease(deps, req, tool);
    const claimed = await claim(deps, req, record, tool, lease);
    if (claimed.ok) return run(deps, req, call, claimed.record, lease);
    return claimed.current ? existingRecord(deps, req, call, claimed.current, mode, depth + 1) : gone(record);
  }
  return reportOnly(deps, req, record, tool);
}

/**
 * A record in flight, reported as it stands (the contract, §5): 409 while a live lease holds it,
 * otherwise 202. Reporting a record that is still in flight is not a replay: only terminal outcomes
 * are replayed.
 */
export function reportOnly(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
): SubmitResult {
  if (record.state === 'pending' && (record.lease_expires_at ?? 0) > req.now) {
    deps.metrics.count(LEDGER_METRICS.inProgressRejections, record.tool);
    logObservation(deps, req, record, tool, 'operation_in_progress', false);
    return { kind: 'in_progress', record, retryAfterSeconds: 1 };
  }
  logObservation(deps, req, record, tool, `reported_${record.state}`, false);
  return accepted(deps, record, false);
}

async function run(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  record: OperationRecord,
  lease: Lease,
): Promise<SubmitResult> {
  let after: OperationRecord;
  try {
    after = await runAttempt(deps, req, record, call.tool, call.args, lease);
  } catch (error) {
    // The commit could not be made durable. The effect may have happened: the record stays pending
    // under a lease that will expire, and the reconciler takes it from there (the contract, §3 step 7).
    logger.error('commit not durable; left to the reconciler', {
      operation_id: record.operation_id,
      attempt_number: record.attempt,
      error_class: error instanceof Error ? error.name : typeof error,
    });
    return accepted(deps, record, false);
  }
  if (isTerminal(after.state)) {
    deps.cache.put(after);
    const ranHere = after.attempt === record.attempt && after.outcome_by === lease.owner;
    return { kind: 'completed', record: after, replayed: !ranHere };
  }
  if (
    after.state === 'failed_retryable' &&
    after.attempt === record.attempt &&
    after.outcome_by === lease.owner
  ) {
    return {
      kind: 'retryable',
      record: after,
      retryAfterSeconds: Math.ceil(backoffMs(deps.config.retryBaseMs, after.attempt) / 1000),
    };
  }
  return accepted(deps, after, false);
}

/** The 202 of a record reported as it stands, with its `Retry-After`. */
export function accepted(deps: LedgerDeps, record: OperationRecord, replayed: boolean): SubmitResult {
  const seconds =
    record.state === 'queued' || record.state === 'pending'
      ? 1
      : Math.max(1, Math.ceil(deps.config.retryBaseMs / 1000));
  return { kind: 'accepted', record, retryAfterSeconds: seconds, replayed };
}

function gone(record: OperationRecord): never {
  throw new Error(`operation record ${record.operation_id} vanished while being claimed`);
}
