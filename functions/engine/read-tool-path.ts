import { randomUUID } from 'node:crypto';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyUnknownError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { IdempotencyConflictError, LedgerUnavailableError } from '../domain/errors';
import type { OperationError, OperationRecord } from '../domain/operation';
import type { AnyTool } from '../domain/tool';
import { operationKey } from '../ledger/keys';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import type { PreparedCall } from './prepare-call';
import { classify, sanitize } from './run-attempt';
import type { SubmitResult } from './submit-operation';
import { toolContext, underDeadline } from './tool-invocation';
import { type AttemptOutcome, type Caller, newLease, targetClass } from './transitions';

/**
 * The read-tool path (SPEC §4, `effect: 'read'`): identity plus a short-lived cache of results, built
 * on Powertools idempotency instead of the ledger's write path.
 *
 * Why reads may use Powertools and writes must not: Powertools deletes its record when the function
 * throws, lets a duplicate run again once the in-progress lock expires, and completes without a
 * condition. For a write each of those is a second effect; for a read it is only a second read. What
 * a read gains is Powertools' cost profile: a conditional PutItem and an UpdateItem for a fresh read,
 * one PutItem for a replay (its `ReturnValuesOnConditionCheckFailure` carries the stored result), and
 * no call at all once the result is in this process's local cache.
 *
 * Storage: the SAME ledger table, in items of their own. Powertools' key is `tool-ledger.read#` +
 * SHA-256 of `[tenant, operation ID]` in `pk`, with the sort key `read` (ledger operations use `op`),
 * and `expires_at` as its expiry attribute, which is the table's TTL attribute. These items never
 * carry `attention_*` or `unresolved_*`, so they are in neither GSI: the reconciler and the operators'
 * listing never see a read. One table means one set of grants, one TTL and one local data file; a
 * second table would buy nothing but a second thing to deploy.
 *
 * ```
 *  read ─ PutItem(INPROGRESS) IF absent ∨ expired ─▶ run tool ─┬ ok ──── UpdateItem(COMPLETED, result)
 *           │ local cache hit: no call                          └ throws ─ DeleteItem (next call runs again)
 *           └ exists ─▶ digest differs: conflict │ INPROGRESS: in_progress │ COMPLETED: replay
 * ```
 *
 * Outcomes: a fresh read is `completed` with `replayed: false`; a cached or persisted one `completed`
 * with `replayed: true`; a read running elsewhere `in_progress`; the same ID with other arguments an
 * {@link IdempotencyConflictError}. Reads are never `uncertain` and never reconciled: a read that
 * fails is not stored; a known refusal (`TerminalToolError`) answers `completed` in `failed_terminal`,
 * and anything else `retryable`, and the next call runs it again.
 *
 * Downstream key: a read has no ledger record, so no `reservation_id` of one. Each run of a read is
 * its own reservation: it gets a fresh random `reservation_id` (stored with its cached result, so a
 * replay shows the one that ran), and with it a downstream key of its own. A read is never retried
 * under an identity (a failed read is deleted and the next call runs anew), so no target ever needs
 * to recognise two runs of one read as the same request.
 *
 * Known limits: a read is not an operation of the ledger (`GET /v1/operations/{id}` does not find it),
 * and an operation ID used for a write and for a read names two separate items, so that reuse is not
 * reported as a conflict.
 *
 * @example
 * ```ts
 * if (call.tool.effect === 'read') return submitReadOperation(deps, req, call, caller);
 * ```
 */
export async function submitReadOperation(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
): Promise<SubmitResult> {
  const tool = call.tool;
  const runner = readRunnerFor(deps, tool);
  const lease = newLease(deps, req, tool);
  // Reads have no queued path: they always answer within the synchronous budget.
  const deadline = Math.min(lease.deadline, req.now + deps.config.syncWaitMs);
  const lockUntil = deadline + deps.config.leaseGraceMs;
  const key: ReadKey = { tenant: caller.tenant, operation_id: call.operationId, digest: call.digest };
  const invocation: ReadInvocation = {
    getRemainingTimeInMillis: () => Math.max(1, lockUntil - Date.now()),
    run: () => runRead(deps, req, call, caller, deadline),
  };

  let response: ReadResponse;
  try {
    response = await runner(key, invocation);
  } catch (error) {
    return failedRead(deps, req, call, caller, error);
  }
  const replayed = response.replayed === true;
  const record = readRecord(call, caller, {
    state: 'succeeded',
    result: response.result,
    outcome_code: response.outcome_code,
    requested_by: response.requested_by,
    created_at: response.created_at,
    completed_at: response.completed_at,
    expires_at:
      response.expires_at ?? Math.round(Date.parse(response.completed_at) / 1000) + cacheSeconds(tool),
    agent_run_id: response.agent_run_id,
    reservation_id: response.reservation_id,
  });
  deps.metrics.count(replayed ? 'Replays' : 'FirstExecutions', tool.name);
  const code = replayed ? 'replayed' : response.outcome_code;
  logRead(deps, req, record, tool, replayed ? 'succeeded' : null, code, replayed);
  return { kind: 'completed', record, replayed };
}

/** Sort key of read-cache items; ledger operations use `op`. */
export const READ_SK = 'read';
/** Powertools key prefix: fixed, so that the API and the executor Lambdas share one cache. */
export const READ_KEY_PREFIX = 'tool-ledger.read';
/** How long a read result is kept when the tool sets no `retention`, seconds. */
export const DEFAULT_READ_CACHE_SECONDS = 60;

/** What identifies a read: Powertools hashes `[tenant, operation_id]` into the key and `digest` for validation. */
interface ReadKey {
  tenant: string;
  operation_id: string;
  digest: string;
}

/**
 * The second argument of the idempotent function. It has `getRemainingTimeInMillis`, so Powertools
 * treats it as the Lambda context and sets the in-progress expiry from it (the read's deadline plus the
 * lease grace): a read whose process died is run again after that, not after the whole cache lifetime.
 */
interface ReadInvocation {
  getRemainingTimeInMillis(): number;
  run(): Promise<StoredRead>;
}

/** What is persisted in Powertools' `data` attribute: enough to rebuild the record on a replay. */
interface StoredRead {
  result: string;
  outcome_code: string;
  arguments_digest: string;
  requested_by: string;
  created_at: string;
  completed_at: string;
  agent_run_id?: string;
  /** The run's own reservation (see {@link submitReadOperation}); absent in reads cached before it. */
  reservation_id?: string;
}

/** A stored read as the runner returns it; `replayed` and `expires_at` are added on replays only. */
interface ReadResponse extends StoredRead {
  replayed?: boolean;
  expires_at?: number;
}

type ReadRunner = (key: ReadKey, invocation: ReadInvocation) => Promise<ReadResponse>;

/** A read that did not succeed; thrown through Powertools so that it deletes its record. */
class ReadFailedError extends Error {
  constructor(readonly outcome: AttemptOutcome) {
    super('the read did not succeed');
    this.name = 'ReadFailedError';
  }
}

/**
 * Powertools' DynamoDB layer with the ledger table's key schema: its hashed key in `pk`, and `read` in
 * `sk`. Its own composite-key mode would put every read under one static partition key instead.
 */
class ReadCachePersistence extends DynamoDBPersistenceLayer {
  protected override getKey(idempotencyKey: string): Record<string, AttributeValue> {
    return marshall({ pk: idempotencyKey, sk: READ_SK });
  }
}

/**
 * One runner per tool and per deps (a Lambda builds its deps once per cold start), so each tool has
 * its own cache lifetime and its own local cache, which lives as long as the process.
 */
const runners = new WeakMap<LedgerDeps, Map<string, ReadRunner>>();

function readRunnerFor(deps: LedgerDeps, tool: AnyTool): ReadRunner {
  let byTool = runners.get(deps);
  if (!byTool) {
    byTool = new Map();
    runners.set(deps, byTool);
  }
  const existing = byTool.get(tool.name);
  if (existing) return existing;
  const persistenceStore = new ReadCachePersistence({
    tableName: deps.store.tableName,
    awsSdkV3Client: deps.store.client,
    keyAttr: 'pk',
    expiryAttr: 'expires_at',
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[tenant, operation_id]',
    payloadValidationJmesPath: 'digest',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: cacheSeconds(tool),
    useLocalCache: true,
    hashFunction: 'sha256',
    // Called only when Powertools answers from its cache or its table: that is what marks a replay.
    responseHook: (response, record) =>
      Object.assign({}, response as object, { replayed: true, expires_at: record.expiryTimestamp }),
  });
  const idempotent = makeIdempotent(
    (_key: ReadKey, invocation: ReadInvocation): Promise<StoredRead> => invocation.run(),
    { persistenceStore, config, keyPrefix: READ_KEY_PREFIX },
  );
  const runner: ReadRunner = (key, invocation) => idempotent(key, invocation) as Promise<ReadResponse>;
  byTool.set(tool.name, runner);
  return runner;
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
    const { json, code } = sanitize(call.tool, value, call.args);
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

/** Maps whatever the runner threw to a result or a typed error. */
function failedRead(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
  error: unknown,
): SubmitResult {
  const tool = call.tool;
  const requested_by = caller.principal;
  const created_at = new Date(req.now).toISOString();
  if (error instanceof ReadFailedError) {
    const { outcome } = error;
    const known = outcome.state === 'failed_terminal';
    const record = readRecord(call, caller, {
      state: known ? 'failed_terminal' : 'failed_retryable',
      requested_by,
      created_at,
      outcome_code: outcome.outcomeCode,
      error: outcome.error,
      completed_at: known ? new Date(deps.clock()).toISOString() : undefined,
    });
    logRead(deps, req, record, tool, null, outcome.outcomeCode, false);
    if (known) return { kind: 'completed', record, replayed: false };
    return { kind: 'retryable', record, retryAfterSeconds: 1 };
  }
  if (error instanceof IdempotencyValidationError) {
    const stored = error.existingRecord?.getResponse() as Partial<StoredRead> | undefined;
    const record = readRecord(call, caller, { state: 'succeeded', requested_by, created_at });
    deps.metrics.count('Conflicts', tool.name);
    logRead(deps, req, record, tool, null, 'idempotency_key_reused', false);
    throw new IdempotencyConflictError(call.operationId, stored?.arguments_digest ?? 'unknown');
  }
  if (error instanceof IdempotencyAlreadyInProgressError) {
    const record = readRecord(call, caller, { state: 'pending', requested_by, created_at });
    deps.metrics.count('InProgressRejections', tool.name);
    logRead(deps, req, record, tool, 'pending', 'operation_in_progress', false);
    return { kind: 'in_progress', record, retryAfterSeconds: 1 };
  }
  if (error instanceof IdempotencyUnknownError) {
    // Persistence failures (unreachable, throttled, inconsistent state): nothing durable was decided.
    throw new LedgerUnavailableError('the read cache is unavailable or throttled', error);
  }
  throw error;
}

/** Fields a synthesized read record takes from its outcome. */
interface ReadRecordFields {
  state: OperationRecord['state'];
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
 * A read is not a ledger item: this is its record as the API's operation view expects one. Built
 * field by field: on Node 20, a literal extended after an object spread falls into V8's dictionary
 * mode, which costs more than everything else a warm replay does.
 */
function readRecord(call: PreparedCall, caller: Caller, fields: ReadRecordFields): OperationRecord {
  const record: OperationRecord = {
    pk: operationKey(caller.tenant, call.operationId).pk,
    sk: READ_SK,
    tenant: caller.tenant,
    operation_id: call.operationId,
    tool: call.tool.name,
    arguments: call.canonicalArguments,
    arguments_digest: call.digest,
    state: fields.state,
    attempt: 1,
    max_attempts: 1,
    retention_seconds: cacheSeconds(call.tool),
    requested_by: fields.requested_by,
    // A read that did not complete (failed, in progress, a conflict) has no reservation to show.
    reservation_id: fields.reservation_id ?? '',
    created_at: fields.created_at,
    updated_at: fields.completed_at ?? fields.created_at,
  };
  if (fields.result !== undefined) record.result = fields.result;
  if (fields.outcome_code !== undefined) record.outcome_code = fields.outcome_code;
  if (fields.error !== undefined) record.error = fields.error;
  if (fields.completed_at !== undefined) record.completed_at = fields.completed_at;
  if (fields.expires_at !== undefined) record.expires_at = fields.expires_at;
  const agentRunId = fields.agent_run_id ?? caller.agentRunId;
  if (agentRunId !== undefined) record.agent_run_id = agentRunId;
  return record;
}

/** One log line per read request, in the transition shape (SPEC §9): codes and identities only. */
function logRead(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  before: OperationRecord['state'] | null,
  code: string,
  replayed: boolean,
): void {
  deps.log({
    event_time: new Date().toISOString(),
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
  });
}
