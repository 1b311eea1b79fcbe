import canonicalize from 'canonicalize';
import { operationKey } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { IdempotencyConflictError, ValidationError } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import { assertOperationId } from '../domain/operation-id';
import { boundPolicy, policyDrift } from '../domain/policy';
import { isTerminal } from '../domain/states';
import type { AnyTool } from '../domain/tool';
import { logger } from '../observability/logger';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { type PreparedCall, prepareCall } from './prepare-call';
import { backoffMs } from './record-fields';
import { reservationPolicy } from './reservation-policy';
import { runAttempt } from './run-attempt';
import { enqueueQuietly } from './stored-call';
import type { SubmitResult } from './submit-result';
import {
  type Caller,
  claim,
  exhaustAttempts,
  holdForOperator,
  isExpired,
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
  let call: PreparedCall;
  try {
    call = prepareCall(deps.tools, request.operationId, request.tool, request.arguments);
  } catch (error) {
    // The ledger's own message for a stored operation whose tool's schema now refuses its arguments.
    if (request.mode === 'worker' && error instanceof ValidationError) {
      return storedCallRefused(deps, req, request, error);
    }
    throw error;
  }
  const caller: Caller = { tenant: request.tenant, principal: request.principal };
  if (request.requesterUnidentified === true) caller.requesterUnidentified = true;
  if (request.agentRunId !== undefined) caller.agentRunId = request.agentRunId;
  const cached = deps.cache.get(operationKey(request.tenant, call.operationId).pk, req.now);
  if (cached) return existingRecord(deps, req, call, cached, request);
  // The executor never takes the read path: a message names a ledger operation (an approval, an
  // asynchronous call, a re-send) or is one, and it is claimed and recorded like any other.
  if (call.tool.effect === 'read' && request.mode !== 'worker') {
    // Powertools idempotency and its JMESPath engine are loaded by the first read: deployments whose
    // tools all write never load them.
    readToolPath ??= import('./read-tool-path');
    const { submitReadOperation } = await readToolPath;
    const answer = await submitReadOperation(deps, req, call, caller);
    // A ledger record under this key (the tool was a write when it was reserved) governs the call.
    return answer.kind === 'ledger_record' ? existingRecord(deps, req, call, answer.record, request) : answer;
  }

  // A tool whose timeout does not fit the synchronous budget always runs asynchronously (the contract, §3).
  const policy = reservationPolicy(deps, call);
  const tooLong = request.mode === 'sync' && policy.timeout_ms > deps.config.syncWaitMs;
  const runsLater = tooLong || request.mode === 'async';
  if (policy.requires_approval) {
    const reservation = await reserve(deps, req, call, caller, 'awaiting_approval', policy);
    if (reservation.created) return accepted(deps, reservation.record, false);
    return existingRecord(deps, req, call, reservation.existing, request);
  }
  if (runsLater) {
    const reservation = await reserve(deps, req, call, caller, 'queued', policy);
    if (reservation.created) {
      await enqueueQuietly(deps, reservation.record);
      return accepted(deps, reservation.record, false);
    }
    return existingRecord(deps, req, call, reservation.existing, request);
  }
  const lease = newLease(deps, req, policy.timeout_ms);
  const reservation = await reserve(deps, req, call, caller, 'pending', policy, lease);
  if (reservation.created) return run(deps, req, call, reservation.record, lease);
  return existingRecord(deps, req, call, reservation.existing, request);
}

/**
 * The contract's §3, step 4: a record exists. It is governed by the policy it was reserved under
 * (functions/domain/policy.ts), whatever the tool says now: a retry of a terminal record is a replay
 * even if the tool became a read since, and a claim of the next attempt first checks that the tool
 * still matches that policy, or hands the operation to an operator.
 */
async function existingRecord(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  record: OperationRecord,
  request: SubmitRequest,
  depth = 0,
): Promise<SubmitResult> {
  const tool = call.tool;
  if (record.arguments_digest !== call.digest) {
    // The executor's message for this very record: its stored arguments, which the tool's schema now
    // normalizes differently. Not a caller's conflict: the operation goes to an operator.
    if (request.mode === 'worker' && sameStoredCall(record, request)) {
      return storedCallDrifted(deps, req, record, tool, 'differs', request, depth);
    }
    deps.metrics.count(LEDGER_METRICS.conflicts, tool.name);
    logObservation(deps, req, record, tool, 'idempotency_key_reused', false);
    throw new IdempotencyConflictError(record.operation_id, record.arguments_digest);
  }
  return storedCall(deps, req, record, tool, call.args, request, depth, (current) =>
    existingRecord(deps, req, call, current, request, depth + 1),
  );
}

/**
 * What a record whose digest matches becomes: replayed when terminal; claimed for its next attempt
 * when the request may claim it and the tool still matches its policy (else held for an operator);
 * otherwise reported as it stands. `again` re-enters with the record a lost write found.
 */
async function storedCall(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  request: SubmitRequest,
  depth: number,
  again: (current: OperationRecord) => Promise<SubmitResult>,
  renormalized?: 'differs' | 'refused',
): Promise<SubmitResult> {
  if (isTerminal(record.state)) {
    deps.cache.put(record);
    deps.metrics.count(LEDGER_METRICS.replays, tool.name);
    logObservation(deps, req, record, tool, 'replayed', true);
    return { kind: 'completed', record, replayed: true };
  }
  const policy = boundPolicy(record, tool);
  // Its caller executes it (the contract, §14): whatever the deployment registers under that name now,
  // the ledger's own paths never claim, enqueue or run it. Reported as it stands; its caller moves it.
  if (policy.execution === 'caller') return reportOnly(deps, req, record, tool);
  let mode = request.mode;
  // The stored timeout decides, as it did at the reservation: one that does not fit runs on the queue.
  if (mode === 'sync' && policy.timeout_ms > deps.config.syncWaitMs) mode = 'async';
  const claimable = record.state === 'failed_retryable' || (record.state === 'queued' && mode === 'worker');
  if (claimable && depth < 2) {
    if (record.state === 'failed_retryable' && record.attempt >= policy.max_attempts) {
      const exhausted = await exhaustAttempts(deps, req, record, tool);
      if (exhausted.ok) return { kind: 'completed', record: exhausted.record, replayed: false };
      return exhausted.current ? again(exhausted.current) : gone(record);
    }
    if (mode === 'async') {
      await enqueueQuietly(deps, record);
      return accepted(deps, record, false);
    }
    const drift = policyDrift(record, tool, args, renormalized);
    if (drift !== undefined) {
      const held = await holdForOperator(deps, req, record, tool, drift);
      if (held.ok) {
        deps.metrics.count(LEDGER_METRICS.needsReconciliation, tool.name);
        return accepted(deps, held.record, false);
      }
      return held.current ? again(held.current) : gone(record);
    }
    const lease = newLease(deps, req, policy.timeout_ms);
    const claimed = await claim(deps, req, record, tool, lease);
    if (claimed.ok) return run(deps, req, { tool, args }, claimed.record, lease);
    return claimed.current ? again(claimed.current) : gone(record);
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

/** Whether a work message carries a record's own call: its tool and its stored (normalized) arguments. */
function sameStoredCall(record: OperationRecord, request: SubmitRequest): boolean {
  return record.tool === request.tool && canonicalize(request.arguments) === record.arguments;
}

/**
 * A stored operation whose arguments the tool's schema no longer normalizes as it did: it is replayed
 * if terminal, held for an operator if a worker would claim it, reported otherwise. Never run: the tool
 * would receive arguments its schema does not produce.
 */
function storedCallDrifted(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  renormalized: 'differs' | 'refused',
  request: SubmitRequest,
  depth: number,
): Promise<SubmitResult> {
  return storedCall(
    deps,
    req,
    record,
    tool,
    JSON.parse(record.arguments),
    request,
    depth,
    (current) =>
      sameStoredCall(current, request)
        ? storedCallDrifted(deps, req, current, tool, renormalized, request, depth + 1)
        : Promise.reject(new IdempotencyConflictError(current.operation_id, current.arguments_digest)),
    renormalized,
  );
}

/**
 * The executor's message failed the tool's schema. When it carries a stored operation's own call (a
 * re-send of a record the schema accepted at its reservation), the record is not left waiting for a
 * message that can never run: it is held for an operator. Any other message is refused as before.
 */
async function storedCallRefused(
  deps: LedgerDeps,
  req: RequestContext,
  request: SubmitRequest,
  refusal: ValidationError,
): Promise<SubmitResult> {
  const tool = typeof request.tool === 'string' ? deps.tools.find(request.tool) : undefined;
  if (!tool || !isOperationId(request.operationId)) throw refusal;
  const record = await deps.store.get(operationKey(request.tenant, request.operationId));
  if (!record || isExpired(record, req.now) || !sameStoredCall(record, request)) throw refusal;
  return storedCallDrifted(deps, req, record, tool, 'refused', request, 0);
}

async function run(
  deps: LedgerDeps,
  req: RequestContext,
  call: Pick<PreparedCall, 'tool' | 'args'>,
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

function isOperationId(id: unknown): id is string {
  try {
    assertOperationId(id);
    return true;
  } catch {
    return false;
  }
}

function gone(record: OperationRecord): never {
  throw new Error(`operation record ${record.operation_id} vanished while being claimed`);
}
