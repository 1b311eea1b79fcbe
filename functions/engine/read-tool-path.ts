import { randomUUID } from 'node:crypto';
import { operationKey } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { IdempotencyConflictError } from '../domain/errors';
import type { OperationError, OperationRecord, OperationSnapshot } from '../domain/operation';
import type { AnyTool } from '../domain/tool';
import { traceTransition } from '../observability/tracing';
import type { TransitionLogLine } from '../observability/transition-log';
import { classify, sanitize } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import type { PreparedCall } from './prepare-call';
import type { ReadCacheAnswer, StoredRead } from './read-cache';
import type { SubmitResult } from './submit-result';
import { toolContext, underDeadline } from './tool-invocation';
import { type AttemptOutcome, type Caller, isExpired, newLease, targetClass } from './transitions';

/**
 * The read-tool path (the contract, §4, `effect: 'read'`): identity plus a short-lived cache of results
 * (the store's read cache, {@link OperationStore.readCache}) instead of the ledger's write path. A
 * read is only a second read when it runs twice, so what protects writes (a conditional commit, a
 * reconciler) would cost a read more than it saves; the cache answers a repeat without running it.
 *
 * Outcomes: a fresh read is `completed` with `replayed: false`; a cached or persisted one `completed`
 * with `replayed: true`; a read running elsewhere `in_progress`; the same ID with other arguments an
 * {@link IdempotencyConflictError}. Reads are never `uncertain` and never reconciled: a read that
 * fails is not stored; a known refusal (`TerminalToolError`) answers `completed` in `failed_terminal`,
 * and anything else `retryable`, and the next call runs it again.
 *
 * Downstream key: a read has no ledger record, so no reservation of one. Each run of a read is
 * its own reservation: it gets a fresh random `reservation_id` (stored with its cached result, so a
 * replay shows the one that ran), and with it a downstream key of its own. A read is never retried
 * under an identity (a failed read is deleted and the next call runs anew), so no target ever needs
 * to recognise two runs of one read as the same request.
 *
 * A ledger record comes first: before a read runs (not when a kept result answers), the ledger is asked
 * whether an operation under this key exists (the tool was a write when it was reserved, or the
 * executor ran the read as an operation); if it does, the answer is `ledger_record` and the caller
 * treats the call as a retry of that operation (a replay when it is terminal), never as a new read.
 * That costs a fresh read one consistent GetItem; repeats answered from the cache pay nothing.
 *
 * Known limit: a read is not an operation of the ledger (`GET /v1/operations/{id}` does not find it).
 *
 * @example
 * ```ts
 * const answer = await submitReadOperation(deps, req, call, caller);
 * if (answer.kind === 'ledger_record') return existingRecord(deps, req, call, answer.record, request);
 * ```
 */
export async function submitReadOperation(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
): Promise<SubmitResult | LedgerRecordFound> {
  const tool = call.tool;
  const lease = newLease(deps, req, tool.timeoutMs ?? 10_000);
  // Reads have no queued path: they always answer within the synchronous budget.
  const deadline = Math.min(lease.deadline, req.now + deps.config.syncWaitMs);
  const created_at = new Date(req.now).toISOString();
  let answer: ReadCacheAnswer;
  try {
    answer = await deps.store.readCache.runOnce(
      { tenant: caller.tenant, operation_id: call.operationId, digest: call.digest },
      { tool: tool.name, cacheSeconds: cacheSeconds(tool), lockUntil: deadline + deps.config.leaseGraceMs },
      () => runRead(deps, req, call, caller, deadline),
    );
  } catch (error) {
    if (error instanceof LedgerRecordExists) return { kind: 'ledger_record', record: error.record };
    if (!(error instanceof ReadFailedError)) throw error;
    return failedRead(deps, req, call, caller, error.outcome);
  }
  // A refused read has no stored run: the answer's record is the call itself, in the state it met.
  const refusedAs = (state: 'succeeded' | 'pending') =>
    readOperation(call, caller, { state, requested_by: caller.principal, created_at });
  if (answer.kind === 'conflict') {
    const operation = refusedAs('succeeded');
    deps.metrics.count(LEDGER_METRICS.conflicts, tool.name);
    logRead(deps, req, operation, tool, null, 'idempotency_key_reused', false);
    throw new IdempotencyConflictError(call.operationId, answer.storedDigest ?? 'unknown');
  }
  if (answer.kind === 'in_progress') {
    const operation = refusedAs('pending');
    deps.metrics.count(LEDGER_METRICS.inProgressRejections, tool.name);
    logRead(deps, req, operation, tool, 'pending', 'operation_in_progress', false);
    return { kind: 'in_progress', record: operation, retryAfterSeconds: 1 };
  }
  const replayed = answer.kind === 'replayed';
  const stored = answer.stored;
  const operation = readOperation(call, caller, {
    state: 'succeeded',
    result: stored.result,
    outcome_code: stored.outcome_code,
    requested_by: stored.requested_by,
    created_at: stored.created_at,
    completed_at: stored.completed_at,
    expires_at:
      (answer.kind === 'replayed' ? answer.expiresAt : undefined) ??
      Math.round(Date.parse(stored.completed_at) / 1000) + cacheSeconds(tool),
    agent_run_id: stored.agent_run_id,
    reservation_id: stored.reservation_id,
  });
  deps.metrics.count(replayed ? LEDGER_METRICS.replays : LEDGER_METRICS.firstExecutions, tool.name);
  const code = replayed ? 'replayed' : stored.outcome_code;
  logRead(deps, req, operation, tool, replayed ? 'succeeded' : null, code, replayed);
  return { kind: 'completed', record: operation, replayed };
}

/** How long a read result is kept when the tool sets no `retention`, seconds. */
export const DEFAULT_READ_CACHE_SECONDS = 60;

/** A read that did not succeed; thrown through the cache so that it keeps nothing. */
class ReadFailedError extends Error {
  constructor(readonly outcome: AttemptOutcome) {
    super('the read did not succeed');
    this.name = 'ReadFailedError';
  }
}

/** A ledger operation holds the key: the call is a retry of it, never a new read. */
export interface LedgerRecordFound {
  kind: 'ledger_record';
  record: OperationRecord;
}

/** Thrown through the cache when a ledger record holds the key, so that the cache keeps nothing. */
class LedgerRecordExists extends Error {
  constructor(readonly record: OperationRecord) {
    super('a ledger operation holds the key');
    this.name = 'LedgerRecordExists';
  }
}

/** A read tool's cache lifetime: its `retention`, else {@link DEFAULT_READ_CACHE_SECONDS}. */
function cacheSeconds(tool: AnyTool): number {
  return tool.retention ?? DEFAULT_READ_CACHE_SECONDS;
}

/** Runs the tool once under the same hard deadline and abort signal as a write attempt. */
async function runRead(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
  deadlineAt: number,
): Promise<StoredRead> {
  const existing = await deps.store.get(operationKey(caller.tenant, call.operationId));
  if (existing !== undefined && !isExpired(existing, req.now)) throw new LedgerRecordExists(existing);
  const started = deps.clock();
  const reservationId = randomUUID();
  const identity = {
    tenant: caller.tenant,
    operationId: call.operationId,
    reservationId,
    toolName: call.tool.name,
    attempt: 1,
  };
  try {
    const value = await underDeadline(deadlineAt, deps.clock, (signal) =>
      call.tool.execute(call.args, toolContext(identity, signal)),
    );
    // A read's answer is cached as text inside Powertools' item (ledger/read-cache.ts).
    const { json, code } = sanitize(call.tool, value, call.args, 'text');
    const stored: StoredRead = {
      result: json,
      outcome_code: code,
      arguments_digest: call.digest,
      requested_by: caller.principal,
      created_at: new Date(req.now).toISOString(),
      completed_at: new Date(deps.clock()).toISOString(),
      reservation_id: reservationId,
    };
    if (caller.agentRunId !== undefined) stored.agent_run_id = caller.agentRunId;
    return stored;
  } catch (error) {
    throw new ReadFailedError(classify(error, deps.clock() - started));
  }
}

/** A read that ran and did not succeed: a known refusal is terminal, anything else retryable. */
function failedRead(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
  outcome: AttemptOutcome,
): SubmitResult {
  const known = outcome.state === 'failed_terminal';
  const operation = readOperation(call, caller, {
    state: known ? 'failed_terminal' : 'failed_retryable',
    requested_by: caller.principal,
    created_at: new Date(req.now).toISOString(),
    outcome_code: outcome.outcomeCode,
    error: outcome.error,
    completed_at: known ? new Date(deps.clock()).toISOString() : undefined,
  });
  logRead(deps, req, operation, call.tool, null, outcome.outcomeCode, false);
  if (known) return { kind: 'completed', record: operation, replayed: false };
  return { kind: 'retryable', record: operation, retryAfterSeconds: 1 };
}

/**
 * What a read answers: the fields of an operation body (the contract, §5), with no ledger record behind them:
 * no key, no attempt budget, and a reservation only when a run of the read completed.
 */
export interface ReadOperation extends OperationSnapshot {
  requested_by: string;
  /** The run's own reservation (see {@link submitReadOperation}). */
  reservation_id?: string;
}

/** What a read's answer takes from its outcome. */
interface ReadFields {
  state: OperationSnapshot['state'];
  requested_by: string;
  created_at: string;
  result?: string;
  outcome_code?: string;
  error?: OperationError;
  completed_at?: string;
  expires_at?: number;
  agent_run_id?: string;
  reservation_id?: string | undefined;
}

/**
 * A read's answer, built field by field: on Node 20, a literal extended after an object spread falls
 * into V8's dictionary mode, which costs more than everything else a warm replay does.
 */
function readOperation(call: PreparedCall, caller: Caller, fields: ReadFields): ReadOperation {
  const operation: ReadOperation = {
    operation_id: call.operationId,
    tenant: caller.tenant,
    tool: call.tool.name,
    arguments: call.canonicalArguments,
    arguments_digest: call.digest,
    state: fields.state,
    attempt: 1,
    requested_by: fields.requested_by,
    created_at: fields.created_at,
  };
  if (fields.reservation_id !== undefined) operation.reservation_id = fields.reservation_id;
  if (fields.result !== undefined) operation.result = fields.result;
  if (fields.outcome_code !== undefined) operation.outcome_code = fields.outcome_code;
  if (fields.error !== undefined) operation.error = fields.error;
  if (fields.completed_at !== undefined) operation.completed_at = fields.completed_at;
  if (fields.expires_at !== undefined) operation.expires_at = fields.expires_at;
  const agentRunId = fields.agent_run_id ?? caller.agentRunId;
  if (agentRunId !== undefined) operation.agent_run_id = agentRunId;
  return operation;
}

/** One log line per read request, in the transition shape (the contract, §9): codes and identities only. */
function logRead(
  deps: LedgerDeps,
  req: RequestContext,
  record: ReadOperation,
  tool: AnyTool,
  before: OperationSnapshot['state'] | null,
  code: string,
  replayed: boolean,
): void {
  const entry: TransitionLogLine = {
    event_time: new Date().toISOString(),
    tenant: record.tenant ?? '',
    agent_run_id: record.agent_run_id ?? null,
    operation_id: record.operation_id,
    tool_name: record.tool,
    arguments_digest: record.arguments_digest,
    attempt_number: record.attempt,
    state_before: before,
    state_after: record.state,
    replayed,
    target_class: targetClass(tool, record.tool),
    outcome_code: code,
    duration_ms: Math.max(0, deps.clock() - req.now),
    request_id: req.requestId,
  };
  traceTransition(entry);
  deps.log(entry);
}
