import { randomUUID } from 'node:crypto';
import { operationKey } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { RECORD_FORMAT } from '../contract/table';
import { claimOwner, isCallerOwner } from '../domain/claim-token';
import { errorClass, LedgerUnavailableError } from '../domain/errors';
import {
  type ApprovalRecord,
  type HistoryEntry,
  isCallerExecuted,
  type LateOutcome,
  type OperationError,
  type OperationRecord,
} from '../domain/operation';
import type { CallerPolicy, LedgerPolicy } from '../domain/policy';
import { isTerminal, type OperationState, type TransitionName } from '../domain/states';
import type { AnyTool } from '../domain/tool';
import { completionEventOf } from '../events/completion-event';
import { logger } from '../observability/logger';
import { traceTransition } from '../observability/tracing';
import type { TransitionLogLine } from '../observability/transition-log';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import type { Expectation, TransitionWrite, WriteResult } from './operation-store';
import { placeResult } from './payloads';
import type { PreparedCall } from './prepare-call';
import type { CallerCall } from './prepare-caller-call';
import {
  ATTENTION_ATTRIBUTES,
  attentionExtra,
  attentionFor,
  operationsIndexFields,
  terminalFields,
  UNRESOLVED_ATTRIBUTES,
  unresolvedFields,
} from './record-fields';

/**
 * The named transitions of the contract's §2, one function each, every one a row of the table in
 * functions/domain/states.ts that the store asserts before it writes. Every function is one
 * conditional write (plus a consistent read when the condition fails) and logs one line when the
 * state changes. None of them ever overwrites a record it did not expect: a failed condition returns
 * what was found. Decision code (approval, reconcile, resolution) decides and calls these; it never
 * builds a write.
 */

/** The right of one worker to run one attempt. */
export interface Lease {
  owner: string;
  /** Epoch ms at which the tool is aborted. */
  deadline: number;
  /** Epoch ms at which the lease ends: deadline + grace. */
  expiresAt: number;
}

/** Who reserved the operation. */
export interface Caller {
  tenant: string;
  principal: string;
  /** The requester is unknown (work from a queue that carries no identity): see `requester_unidentified`. */
  requesterUnidentified?: boolean;
  agentRunId?: string;
}

/**
 * Builds a lease for an attempt of `timeoutMs` (the operation's bound policy, or a read tool's own
 * timeout), bounded by the Lambda's remaining time less the commit reserve.
 */
export function newLease(deps: LedgerDeps, req: RequestContext, timeoutMs: number): Lease {
  let budget = timeoutMs;
  if (req.remainingMs) budget = Math.min(budget, req.remainingMs() - deps.config.commitReserveMs);
  budget = Math.max(budget, 1);
  const deadline = req.now + budget;
  return {
    owner: `${deps.workerId}/${randomUUID()}`,
    deadline,
    expiresAt: deadline + deps.config.leaseGraceMs,
  };
}

/**
 * The lease of a caller's claim (the contract, §14): owned by the claim token's hash, ending
 * `leaseSeconds` from `now` with no grace (the caller chose its lease), which is also its deadline.
 */
export function callerLease(token: string, now: number, leaseSeconds: number): Lease {
  const expiresAt = now + leaseSeconds * 1000;
  return { owner: claimOwner(token), deadline: expiresAt, expiresAt };
}

/** Result of a reservation: ours, or the record that was there. */
export type Reservation =
  | { created: true; record: OperationRecord }
  | { created: false; existing: OperationRecord };

/** The first PutItem plus at most 3 more when the old item turns out absent or expired (the contract, §3). */
const MAX_RESERVE_TRIES = 4;

/**
 * Reserves a new operation in `state` (the contract, §3 step 3): one conditional PutItem; if the old item
 * turns out absent or expired, try again (at most 3 times). A lost PutItem response that the SDK
 * retried is recognised by `reservation_id` and counts as ours. `policy` is stored on the record and
 * governs every later step (functions/domain/policy.ts).
 */
export async function reserve(
  deps: LedgerDeps,
  req: RequestContext,
  call: PreparedCall,
  caller: Caller,
  state: 'pending' | 'queued' | 'awaiting_approval',
  policy: LedgerPolicy,
  lease?: Lease,
): Promise<Reservation> {
  const key = operationKey(caller.tenant, call.operationId);
  const nowIso = new Date(req.now).toISOString();
  const approvalDeadline =
    state === 'awaiting_approval' ? req.now + deps.config.approvalTtlSeconds * 1000 : undefined;
  const attempt = state === 'pending' ? 1 : 0;
  // One literal, the index attributes assigned after: the item is built once per reservation.
  const item: OperationRecord = {
    pk: key.pk,
    sk: key.sk,
    tenant: caller.tenant,
    operation_id: call.operationId,
    tool: call.tool.name,
    arguments: call.canonicalArguments,
    arguments_digest: call.digest,
    state,
    attempt,
    max_attempts: call.tool.maxAttempts ?? 3,
    policy,
    retention_seconds: call.tool.retention ?? deps.config.retentionSeconds,
    requested_by: caller.principal,
    ...(caller.requesterUnidentified === true ? { requester_unidentified: true } : {}),
    reservation_id: randomUUID(),
    record_format: RECORD_FORMAT,
    created_at: nowIso,
    updated_at: nowIso,
    history: [{ at: nowIso, from: null, to: state, attempt, by: caller.principal }],
  };
  if (caller.agentRunId !== undefined) item.agent_run_id = caller.agentRunId;
  if (lease) {
    item.lease_owner = lease.owner;
    item.lease_expires_at = lease.expiresAt;
  }
  if (approvalDeadline !== undefined) item.approval_deadline = approvalDeadline;
  Object.assign(
    item,
    unresolvedFields(
      item,
      deps.config,
      attentionFor(state, req.now, deps.config, { leaseExpiresAt: lease?.expiresAt, approvalDeadline }),
    ),
  );
  return putReservation(deps, req, item, call.tool);
}

/**
 * The reservation's write: one conditional PutItem; if the old item turns out absent or expired, try
 * again (at most 3 times). A lost PutItem response that the SDK retried is recognised by
 * `reservation_id` and counts as ours.
 */
async function putReservation(
  deps: LedgerDeps,
  req: RequestContext,
  item: OperationRecord,
  tool: AnyTool | undefined,
): Promise<Reservation> {
  const nowSeconds = Math.floor(req.now / 1000);
  Object.assign(item, operationsIndexFields(item, deps.config));
  const unsent = unsentEventsWith(deps, undefined, null, item);
  if (unsent !== undefined) item.unsent_events = unsent;
  for (let i = 0; i < MAX_RESERVE_TRIES; i++) {
    const result = await deps.store.reserve(item, nowSeconds);
    const existing = result.created ? undefined : result.existing;
    if (result.created || existing?.reservation_id === item.reservation_id) {
      logLine(deps, req, item, null, item.state, tool, { code: null });
      return { created: true, record: item };
    }
    if (existing && !isExpired(existing, req.now)) return { created: false, existing };
  }
  throw new LedgerUnavailableError('the reservation kept racing with expiring records');
}

/** What a caller's reservation is made of, besides who asks: the call, its rules, its identity. */
export interface CallerReservation {
  call: CallerCall;
  policy: CallerPolicy;
  /** Made before the write: a claim token with a `claim_id` is derived from it. */
  reservationId: string;
  /** The claim of attempt 1 when it is reserved straight into `pending`. */
  lease?: Lease;
}

/**
 * Reserves an operation its caller executes (the contract, §14): `pending` at attempt 1 under the
 * caller's claim, or `awaiting_approval`, with its policy fixed on the record. The same write as
 * {@link reserve}; the tool is the caller's name, never one of the deployment's.
 */
export async function reserveForCaller(
  deps: LedgerDeps,
  req: RequestContext,
  reservation: CallerReservation,
  caller: Caller,
  state: 'pending' | 'awaiting_approval',
): Promise<Reservation> {
  const { call, policy, lease } = reservation;
  const key = operationKey(caller.tenant, call.operationId);
  const nowIso = new Date(req.now).toISOString();
  const approvalDeadline =
    state === 'awaiting_approval' ? req.now + deps.config.approvalTtlSeconds * 1000 : undefined;
  const attempt = state === 'pending' ? 1 : 0;
  const item: OperationRecord = {
    pk: key.pk,
    sk: key.sk,
    tenant: caller.tenant,
    operation_id: call.operationId,
    tool: call.toolName,
    arguments: call.canonicalArguments,
    arguments_digest: call.digest,
    state,
    attempt,
    max_attempts: policy.max_attempts,
    retention_seconds: deps.config.retentionSeconds,
    requested_by: caller.principal,
    reservation_id: reservation.reservationId,
    created_at: nowIso,
    updated_at: nowIso,
    history: [{ at: nowIso, from: null, to: state, attempt, by: caller.principal }],
    policy,
  };
  if (caller.agentRunId !== undefined) item.agent_run_id = caller.agentRunId;
  if (lease) {
    item.lease_owner = lease.owner;
    item.lease_expires_at = lease.expiresAt;
  }
  if (approvalDeadline !== undefined) item.approval_deadline = approvalDeadline;
  Object.assign(
    item,
    unresolvedFields(
      item,
      deps.config,
      attentionFor(state, req.now, deps.config, { leaseExpiresAt: lease?.expiresAt, approvalDeadline }),
    ),
  );
  return putReservation(deps, req, item, undefined);
}

/** A terminal record whose `expires_at` has passed is treated as absent (the contract, §2). */
export function isExpired(record: OperationRecord, now: number): boolean {
  return record.expires_at !== undefined && record.expires_at < Math.floor(now / 1000);
}

/**
 * `queued | failed_retryable → pending`: a worker claims the next attempt, raising `attempt` in the
 * same conditional write. A lost response is recognised by our lease owner on the read-back.
 */
export async function claim(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  lease: Lease,
): Promise<WriteResult> {
  const next = record.attempt + 1;
  const result = await write(deps, req, record, tool, {
    transition: 'claim',
    // The state it read, `queued` or `failed_retryable`: the claim is conditioned on that one.
    expect: { states: [record.state], attempt: record.attempt, digest: record.arguments_digest },
    to: 'pending',
    set: {
      attempt: next,
      lease_owner: lease.owner,
      lease_expires_at: lease.expiresAt,
      attention_at: lease.expiresAt,
      updated_at: iso(req.now),
    },
    // What described the previous attempt does not describe this one.
    remove: CLAIM_CLEARS,
  });
  if (!result.ok && result.current?.lease_owner === lease.owner && result.current.attempt === next) {
    // Our claim landed and its response was lost: it is still one transition, logged once.
    logLine(deps, req, result.current, record.state, 'pending', tool, { code: null });
    return { ok: true, record: result.current };
  }
  return result;
}

/** What a claim removes: what described the previous attempt does not describe this one. */
const CLAIM_CLEARS: (keyof OperationRecord)[] = [
  'reconcile_checks',
  'reconciled',
  'reconciled_by',
  'resolved_by',
  'error',
  'outcome_by',
  'outcome_write',
  'outcome_code',
];

/**
 * `queued | failed_retryable → pending` (`claim`) by the caller of an operation it executes (the
 * contract, §14): the next attempt under the caller's claim, in one conditional write. The previous
 * attempt's claim, if it was a caller's, is kept among the record's `superseded_claims`, so an outcome
 * it posts late is recognised as authentic. A caller's `queued` or `failed_retryable` record is in no
 * attention shard (nobody but its caller moves it), so the claim puts it back in one, due at the
 * lease's end. The history names the principal that claimed, never the claim's owner.
 */
export async function claimByCaller(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  lease: Lease,
  principal: string,
): Promise<WriteResult> {
  const next = record.attempt + 1;
  const set: Partial<OperationRecord> = {
    attempt: next,
    lease_owner: lease.owner,
    lease_expires_at: lease.expiresAt,
    claim_write: randomUUID(),
    updated_at: iso(req.now),
    ...unresolvedFields(record, deps.config, lease.expiresAt),
  };
  if (isCallerOwner(record.lease_owner)) {
    set.superseded_claims = [...(record.superseded_claims ?? []), record.lease_owner as string];
  }
  const result = await write(
    deps,
    req,
    record,
    undefined,
    {
      transition: 'claim',
      expect: {
        states: [record.state],
        attempt: record.attempt,
        digest: record.arguments_digest,
        reservationId: record.reservation_id,
      },
      to: 'pending',
      set,
      remove: CLAIM_CLEARS,
    },
    { by: principal },
  );
  if (!result.ok && result.current?.lease_owner === lease.owner && result.current.attempt === next) {
    // The same claim (one claim_id, so one owner) sent twice: only the delivery whose write landed
    // logs the transition; the other answers with the record it found.
    if (result.current.claim_write === set.claim_write) {
      logLine(deps, req, result.current, record.state, 'pending', undefined, { code: null });
    }
    return { ok: true, record: result.current };
  }
  return result;
}

/**
 * `pending → pending` (`extend_lease`): the caller's heartbeat (the contract, §14). Conditioned on the
 * attempt, the claim's owner, the reservation and a lease still live at the clock as the write leaves:
 * an expired claim is never revived, since the reconciler may already have decided its attempt. The
 * attention time follows the lease. No state changes, so no line is logged.
 */
export async function extendLease(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  lease: Pick<Lease, 'owner' | 'expiresAt'>,
): Promise<WriteResult> {
  return deps.store.transition(record, {
    transition: 'extend_lease',
    expect: {
      states: ['pending'],
      attempt: record.attempt,
      leaseOwner: lease.owner,
      reservationId: record.reservation_id,
      leaseLiveAfter: Math.max(req.now, deps.clock()),
    },
    set: { lease_expires_at: lease.expiresAt, attention_at: lease.expiresAt, updated_at: iso(req.now) },
  });
}

/**
 * `failed_retryable → failed_terminal` with `attempts_exhausted` (`exhaust_attempts`): no attempt is
 * left, and every attempt is known not to have applied. When an earlier attempt's outcome was
 * uncertain and it was retried only because the target dedupes on the downstream key
 * (`maybe_applied`), the contract's §7 rule applies instead, whoever executes the operation: a
 * terminal failure must never hide an effect that may have happened, so the operation goes to an
 * operator (`needs_reconciliation`, `attempts_exhausted_maybe_applied`).
 */
export async function exhaustAttempts(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
): Promise<WriteResult> {
  if (record.maybe_applied) {
    return write(deps, req, record, tool, {
      transition: 'exhaust_attempts',
      expect: { states: ['failed_retryable'], attempt: record.attempt },
      to: 'needs_reconciliation',
      set: {
        outcome_code: 'attempts_exhausted_maybe_applied',
        error: {
          code: 'attempts_exhausted',
          message: `all ${record.max_attempts} attempts are used; an earlier attempt's outcome was uncertain, so the target may have applied it: an operator decides`,
        },
        updated_at: iso(req.now),
      },
      remove: [...ATTENTION_ATTRIBUTES],
    });
  }
  return write(deps, req, record, tool, {
    transition: 'exhaust_attempts',
    expect: { states: ['failed_retryable'], attempt: record.attempt },
    to: 'failed_terminal',
    set: {
      outcome_code: 'attempts_exhausted',
      error: {
        code: 'attempts_exhausted',
        message: `all ${record.max_attempts} attempts ended without the effect`,
      },
      updated_at: iso(req.now),
      ...terminalFields(record, req.now),
    },
    remove: UNRESOLVED_ATTRIBUTES,
  });
}

/**
 * `queued | failed_retryable → needs_reconciliation` (`hold_for_operator`): a worker about to claim the
 * next attempt found that the tool no longer matches the policy the operation was reserved under
 * (`reason`, from functions/domain/policy.ts); an operator decides instead of the tool running under
 * another policy. Outcome code `policy_changed`; bound to the reservation and the attempt it read.
 */
export async function holdForOperator(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  reason: string,
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'hold_for_operator',
    expect: { states: [record.state], attempt: record.attempt },
    to: 'needs_reconciliation',
    code: 'policy_changed',
    set: { error: { code: 'policy_changed', message: reason } },
  });
}

/** The outcome of one attempt, as the owner reports it. */
export interface AttemptOutcome {
  state: 'succeeded' | 'failed_terminal' | 'failed_retryable' | 'uncertain';
  outcomeCode: string;
  /** JSON text of the sanitized result (succeeded). */
  result?: string;
  error?: OperationError;
  durationMs: number;
}

/**
 * Writes a commit may take: one per state the record can pass through at one attempt while the owner
 * commits (pending, uncertain, needs_reconciliation, failed_retryable), and transport retries.
 */
const COMMIT_TRIES = 4;

/** States from which an owner's known outcome may still land: a late outcome of the same attempt. */
const LATE_OUTCOME_STATES: readonly OperationState[] = [
  'uncertain',
  'needs_reconciliation',
  'failed_retryable',
];

/**
 * Records the outcome of attempt `n` by its lease owner (the contract, §3 step 6). The condition is
 * `attempt = n AND lease_owner = me AND state = s`, where `s` is the state the owner last read:
 * `pending` (the claim or reservation it made) for any outcome; `uncertain`, `needs_reconciliation` or
 * `failed_retryable` (a late outcome of the same attempt, after the reconciler or an operator moved the
 * record) for a known one only. These are the states the one condition `state IN (…)` accepted before
 * the record was built locally (store.transition): a record that moved to one of them, same attempt
 * and same owner, is committed again against what it is now, conditioned on attempt and owner as
 * before. A write that fails in transit is retried with the same condition and verified by reading
 * back (`outcome_by`). An outcome for a superseded attempt is stored as `late_outcome` and counted.
 *
 * ```
 *  owner ─ UpdateItem IF attempt=n ∧ lease_owner=me ∧ state=s ─▶ ok: committed
 *            │ transport error ──▶ retry same write (≤4) ──▶ condition failed?
 *            └ condition failed ─▶ read: outcome_by=me ∧ state=ours? committed (lost response)
 *                                        attempt=n ∧ lease_owner=me, moved to s' a known outcome
 *                                          replaces? the same write again, conditioned on s'
 *                                        attempt>n? late_outcome annotation
 * ```
 */
export async function recordOutcome(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  lease: Pick<Lease, 'owner'>,
  outcome: AttemptOutcome,
  options: { by?: string } = {},
): Promise<OperationRecord> {
  const known = outcome.state === 'succeeded' || outcome.state === 'failed_terminal';
  const now = deps.clock();
  const terminal = isTerminal(outcome.state);
  const caller = isCallerExecuted(record);
  const set: Partial<OperationRecord> = {
    outcome_code: outcome.outcomeCode,
    outcome_by: lease.owner,
    outcome_write: randomUUID(),
    updated_at: iso(now),
  };
  if (outcome.result !== undefined) set.result = outcome.result;
  if (outcome.error !== undefined) set.error = outcome.error;
  let unattended = false;
  if (terminal) {
    Object.assign(set, terminalFields(record, now));
  } else {
    const at = attentionFor(outcome.state, now, deps.config, attentionExtra(record, record.attempt));
    Object.assign(set, unresolvedFields(record, deps.config, at));
    // A caller's failed_retryable record with attempts left waits for its caller, not the reconciler.
    unattended = at === undefined;
  }
  /** What the commit removes from the record it is conditioned on. */
  const removeFrom = (base: OperationRecord): (keyof OperationRecord)[] => {
    if (!terminal) return unattended ? [...ATTENTION_ATTRIBUTES] : [];
    const remove: (keyof OperationRecord)[] = [...UNRESOLVED_ATTRIBUTES];
    // A success leaves no error behind (an uncertain attempt's code would otherwise linger); the base
    // is exact in `error`, which only a change of state writes.
    if (outcome.state === 'succeeded' && outcome.error === undefined && base.error !== undefined)
      remove.push('error');
    return remove;
  };

  // The record as the owner last read it: the one it claimed or reserved, then what a failed
  // condition returned.
  let base = record;
  let lastError: unknown;
  for (let i = 0; i < COMMIT_TRIES; i++) {
    let result: WriteResult;
    try {
      result = await write(
        deps,
        req,
        base,
        tool,
        {
          transition: base.state === 'pending' ? 'record_outcome' : 'record_late_outcome',
          expect: { states: [base.state], attempt: record.attempt, leaseOwner: lease.owner },
          to: outcome.state,
          set,
          remove: removeFrom(base),
        },
        { code: outcome.outcomeCode, durationMs: outcome.durationMs, by: options.by },
      );
    } catch (error) {
      if (!(error instanceof LedgerUnavailableError)) throw error;
      lastError = error;
      await sleep(50 * 2 ** i);
      continue;
    }
    if (result.ok) {
      if (outcome.state === 'uncertain') deps.metrics.count(LEDGER_METRICS.uncertainOutcomes, record.tool);
      return result.record;
    }
    const current = result.current;
    if (!current) throw new Error('the operation record vanished during commit');
    if (
      current.attempt === record.attempt &&
      current.outcome_by === lease.owner &&
      current.state === outcome.state &&
      current.outcome_write !== set.outcome_write
    ) {
      // Another delivery of the same outcome (a caller's post sent twice) landed first: it logged and
      // counted its transition; this one only answers with the record.
      return current;
    }
    if (
      current.attempt === record.attempt &&
      current.outcome_by === lease.owner &&
      current.state === outcome.state
    ) {
      // Our earlier write landed and its response was lost: log and count the transition it made.
      logLine(deps, req, current, base.state, outcome.state, tool, {
        code: outcome.outcomeCode,
        durationMs: outcome.durationMs,
      });
      if (outcome.state === 'uncertain') deps.metrics.count(LEDGER_METRICS.uncertainOutcomes, record.tool);
      return current;
    }
    if (
      known &&
      current.attempt === record.attempt &&
      current.lease_owner === lease.owner &&
      current.state !== base.state &&
      LATE_OUTCOME_STATES.includes(current.state)
    ) {
      // The reconciler or an operator moved the record first; this attempt's known outcome still wins.
      base = current;
      continue;
    }
    if (current.attempt > record.attempt && !caller) {
      // A caller's superseded outcome is recognised by its token before it gets here
      // (engine/caller-outcome.ts), so an impostor's is never stored.
      await recordLateOutcome(deps, req, record, current, tool, outcome);
    }
    return current;
  }
  throw lastError ?? new LedgerUnavailableError('the record kept changing while the outcome was committed');
}

const LATE_OUTCOME_TRIES = 3;

/**
 * Stores a superseded attempt's outcome as `late_outcome`, logs and counts it. The annotation is
 * bound to the state it read and to the attempt's own reservation: if the record moved in between it
 * is read again and tried again (a few times); on a new operation that reused the expired key it is
 * never written (the log line and the metric still tell).
 */
export async function recordLateOutcome(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  current: OperationRecord,
  tool: AnyTool | undefined,
  outcome: AttemptOutcome,
): Promise<void> {
  const late: LateOutcome = {
    attempt: record.attempt,
    state: outcome.state,
    outcome_code: outcome.outcomeCode,
    at: iso(deps.clock()),
  };
  let seen: OperationRecord | undefined = current;
  let annotated: OperationRecord | undefined;
  for (let i = 0; i < LATE_OUTCOME_TRIES && annotated === undefined; i++) {
    if (seen?.reservation_id !== record.reservation_id || seen.attempt <= record.attempt) break;
    const result = await deps.store.annotateLateOutcome(
      { pk: seen.pk, sk: seen.sk },
      { supersededAttempt: record.attempt, state: seen.state, reservationId: record.reservation_id },
      late,
    );
    if (result.ok) annotated = result.record;
    else seen = result.current;
  }
  deps.metrics.count(LEDGER_METRICS.lateOutcomes, current.tool);
  const at = annotated ?? record;
  emitLine(
    deps,
    line(at, tool, req, {
      attempt: record.attempt,
      before: at.state,
      after: at.state,
      replayed: false,
      code: `${annotated ? 'late_outcome' : 'late_outcome_unrecorded'}:${outcome.state}`,
      durationMs: outcome.durationMs,
    }),
  );
}

/** `pending → uncertain` by the reconciler once the lease has expired. The lease owner is kept, so a late commit of the same attempt still lands. */
export async function expireLease(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
): Promise<WriteResult> {
  return write(
    deps,
    req,
    record,
    tool,
    {
      transition: 'expire_lease',
      expect: {
        states: ['pending'],
        attempt: record.attempt,
        leaseExpiredBefore: req.now,
        reservationId: record.reservation_id,
      },
      to: 'uncertain',
      set: { outcome_code: 'lease_expired', updated_at: iso(req.now), attention_at: req.now },
    },
    { code: 'lease_expired' },
  );
}

/**
 * `awaiting_approval → queued` (`approve`): an approver's yes, bound to the digest it saw and held to
 * the approval deadline in the write's own condition. The caller enqueues the work message once this
 * has landed.
 */
export async function approve(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  approval: ApprovalRecord,
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'approve',
    expect: {
      states: ['awaiting_approval'],
      attempt: record.attempt,
      digest: approval.arguments_digest,
      ...heldToDeadline(deps, req, record),
    },
    to: 'queued',
    code: 'approved',
    set: { approval },
  });
}

/** `awaiting_approval → rejected` (`reject`): an approver's no, bound to the digest it saw and held to the deadline. */
export async function reject(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  approval: ApprovalRecord,
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'reject',
    expect: {
      states: ['awaiting_approval'],
      attempt: record.attempt,
      digest: approval.arguments_digest,
      ...heldToDeadline(deps, req, record),
    },
    to: 'rejected',
    code: 'approval_rejected',
    set: { approval },
  });
}

/**
 * Holds an approver's write to the record's approval deadline, at the clock as the write leaves rather
 * than the request's start: a request slowed past the deadline (retries, a slow read) cannot land late.
 * A record without a deadline has none to hold to (the reservation binding keeps it so).
 */
function heldToDeadline(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
): Pick<Expectation, 'approvalDeadlineAfter'> {
  if (record.approval_deadline === undefined) return {};
  return { approvalDeadlineAfter: Math.max(req.now, deps.clock()) };
}

/** `awaiting_approval → rejected` (`expire_approval`): the reconciler, once the approval deadline passed. */
export async function expireApproval(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'expire_approval',
    expect: { states: ['awaiting_approval'], attempt: record.attempt },
    to: 'rejected',
    code: 'approval_expired',
    set: { error: { code: 'approval_expired', message: 'no approval was given before the deadline' } },
  });
}

/**
 * `uncertain → succeeded` (`reconcile`): the target says the effect happened. `sanitized` is its
 * result as the tool's sanitizer left it (engine/attempt-outcome.ts); the record is marked `reconciled`.
 */
export async function reconcileApplied(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  sanitized: { json: string; code: string },
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'reconcile',
    expect: { states: ['uncertain'], attempt: record.attempt },
    to: 'succeeded',
    code: sanitized.code === 'succeeded' ? 'reconciled_applied' : sanitized.code,
    set: { result: sanitized.json, reconciled: true },
  });
}

/**
 * `uncertain → failed_retryable` (`reconcile`): the next attempt may run. Either the target says the
 * effect did not happen (`reconciled_not_applied`), or it cannot say but dedupes on the downstream key
 * (`downstream_idempotent_retry`), and then the record remembers that the effect may have happened
 * (`maybe_applied`), so an exhausted operation does not claim it never ran.
 */
export async function reconcileNotApplied(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  why: 'target_says_not_applied' | 'downstream_idempotent',
): Promise<WriteResult> {
  const asked = why === 'target_says_not_applied';
  return changeState(deps, req, record, tool, {
    transition: 'reconcile',
    expect: { states: ['uncertain'], attempt: record.attempt },
    to: 'failed_retryable',
    code: asked ? 'reconciled_not_applied' : 'downstream_idempotent_retry',
    set: asked ? { reconciled: true } : { reconciled: true, maybe_applied: true },
  });
}

/**
 * `uncertain → needs_reconciliation` (`reconcile`): the reconciler cannot decide (`code` says why:
 * `no_reconcile`, `reconcile_unknown`, `tool_unregistered`); an operator must.
 */
export async function escalateToOperator(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  code: string,
): Promise<WriteResult> {
  return changeState(deps, req, record, tool, {
    transition: 'reconcile',
    expect: { states: ['uncertain'], attempt: record.attempt },
    to: 'needs_reconciliation',
    code,
  });
}

/** An operator's verdict on one attempt (the contract, §5) and what it moves the record to. */
export interface Resolution {
  outcome: 'applied' | 'not_applied' | 'failed';
  /** Principal label of the operator, recorded as `resolved_by`. */
  principal: string;
  /** The attempt the operator checked: the write lands only while the record is still at it. */
  attempt: number;
  /** JSON text of the result the operator recorded (`applied` only). */
  result?: string;
}

/** The state each resolution outcome moves an operation to. */
export const RESOLUTION_TARGETS: Readonly<Record<Resolution['outcome'], OperationState>> = {
  applied: 'succeeded',
  not_applied: 'failed_retryable',
  failed: 'failed_terminal',
};

/** The states an operator resolves. */
const RESOLVABLE_STATES: readonly OperationState[] = ['uncertain', 'needs_reconciliation'];

/**
 * `uncertain | needs_reconciliation → succeeded | failed_retryable | failed_terminal` (`resolve`): an
 * operator's verdict, at the attempt they checked, with `resolved_by`. Conditioned on the state the
 * record was read in, its attempt and its reservation; if the reconciler gave up on it in between
 * (`uncertain → needs_reconciliation`, same attempt, same reservation), the verdict is written again
 * against what it is now, under the same conditions: the states one `state IN (…)` condition accepted
 * before the record was built locally (store.transition).
 */
export async function resolveByOperator(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  resolution: Resolution,
): Promise<WriteResult> {
  const set: Partial<OperationRecord> = { resolved_by: resolution.principal };
  if (resolution.result !== undefined) set.result = resolution.result;
  if (resolution.outcome === 'failed')
    set.error = { code: 'resolved_failed', message: 'an operator resolved the operation as failed' };
  const resolve = (base: OperationRecord) =>
    changeState(deps, req, base, tool, {
      transition: 'resolve',
      expect: { states: [base.state], attempt: resolution.attempt },
      to: RESOLUTION_TARGETS[resolution.outcome],
      code: `resolved_${resolution.outcome}`,
      set,
    });
  const result = await resolve(record);
  const moved = result.ok ? undefined : result.current;
  if (
    moved &&
    moved.state !== record.state &&
    RESOLVABLE_STATES.includes(moved.state) &&
    moved.attempt === resolution.attempt &&
    moved.reservation_id === record.reservation_id
  ) {
    return resolve(moved);
  }
  return result;
}

/** What a caller found at the target of an uncertain attempt of an operation it executes (the contract, §14). */
export interface CallerVerdict {
  verdict: 'applied' | 'not_applied';
  /** Principal label of the agent that posted it, recorded as `reconciled_by`. */
  principal: string;
  /** The attempt the caller checked: the write lands only while the record is still at it. */
  attempt: number;
  /** JSON text of the result it found (`applied` only). */
  result?: string;
}

/** The state each caller verdict moves an operation to, and the outcome code it logs. */
export const CALLER_VERDICTS: Readonly<
  Record<CallerVerdict['verdict'], { to: OperationState; code: string }>
> = {
  applied: { to: 'succeeded', code: 'verdict_applied' },
  not_applied: { to: 'failed_retryable', code: 'verdict_not_applied' },
};

/**
 * `uncertain | needs_reconciliation → succeeded | failed_retryable` (`caller_verdict`): what an agent
 * of the tenant found at the target of an operation its caller executes, at the attempt it checked,
 * with `reconciled: true` and `reconciled_by`. Conditioned on the state it was read in, its attempt and
 * its reservation; like an operator's resolution, written once more if the reconciler gave up on the
 * record in between (`uncertain → needs_reconciliation`, same attempt and reservation). A
 * `failed_retryable` verdict is never enqueued: the caller's next request claims the next attempt.
 */
export async function recordCallerVerdict(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  verdict: CallerVerdict,
): Promise<WriteResult> {
  const { to, code } = CALLER_VERDICTS[verdict.verdict];
  const set: Partial<OperationRecord> = { reconciled: true, reconciled_by: verdict.principal };
  if (verdict.result !== undefined) set.result = verdict.result;
  const decide = (base: OperationRecord) =>
    changeState(deps, req, base, undefined, {
      transition: 'caller_verdict',
      expect: { states: [base.state], attempt: verdict.attempt },
      to,
      code,
      set,
    });
  const result = await decide(record);
  const moved = result.ok ? undefined : result.current;
  if (
    moved &&
    moved.state !== record.state &&
    RESOLVABLE_STATES.includes(moved.state) &&
    moved.attempt === verdict.attempt &&
    moved.reservation_id === record.reservation_id
  ) {
    return decide(moved);
  }
  return result;
}

/** A decision's write: the transition, what it expects, the new state, its outcome code and fields. */
interface StateChange {
  transition: TransitionName;
  expect: Expectation;
  to: OperationState;
  code: string;
  set?: Partial<OperationRecord>;
}

/**
 * Performs a decision's state change (an approver's, the reconciler's, an operator's): terminal
 * targets get `expires_at` and leave both indexes; others get the attention time of their new state.
 */
async function changeState(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  change: StateChange,
): Promise<WriteResult> {
  const set: Partial<OperationRecord> = {
    ...change.set,
    outcome_code: change.code,
    updated_at: iso(req.now),
  };
  let remove: (keyof OperationRecord)[] = [];
  if (isTerminal(change.to)) {
    Object.assign(set, terminalFields(record, req.now));
    remove = [...UNRESOLVED_ATTRIBUTES];
    // A success leaves no error behind (an earlier uncertain attempt's code would otherwise linger).
    if (change.to === 'succeeded' && set.error === undefined) remove.push('error');
  } else {
    const at = attentionFor(change.to, req.now, deps.config, attentionExtra(record, record.attempt));
    Object.assign(set, unresolvedFields(record, deps.config, at));
    if (at === undefined) remove = [...ATTENTION_ATTRIBUTES];
  }
  return write(
    deps,
    req,
    record,
    tool,
    {
      transition: change.transition,
      // Decisions (reconciler, operators, approvers) are bound to the reservation they read.
      expect: { reservationId: record.reservation_id, ...change.expect },
      to: change.to,
      set,
      remove,
    },
    { code: change.code },
  );
}

/**
 * `X → X` (`defer_attention`): the reconciler looks at a record again at `nextAt` without changing its
 * state (a lease or an approval deadline still running). Conditional on state, attempt and the
 * attention time that was read, so of two reconcilers that saw the same due record only one wins the
 * right to act on it.
 */
export async function deferAttention(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  nextAt: number,
): Promise<WriteResult> {
  return postpone(deps, req, record, nextAt);
}

/**
 * `queued → queued` or `failed_retryable → failed_retryable` (`defer_attention`): the reconciler takes
 * the right to send the record's work message again, and looks again at `nextAt` if it does not run.
 * A `queued` record counts its re-sends (`requeueCount`), which sets its backoff.
 */
export async function requeueLater(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  nextAt: number,
  requeueCount?: number,
): Promise<WriteResult> {
  return postpone(
    deps,
    req,
    record,
    nextAt,
    requeueCount === undefined ? {} : { requeue_count: requeueCount },
  );
}

/**
 * `uncertain → uncertain` (`defer_attention`): the target answered `unknown`; ask again at `nextAt`,
 * counting the check. Also conditional on the count that was read, so two passes count one answer once.
 */
export async function postponeCheck(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  nextAt: number,
): Promise<WriteResult> {
  const checks = record.reconcile_checks ?? 0;
  return postpone(deps, req, record, nextAt, { reconcile_checks: checks + 1 }, { reconcileChecks: checks });
}

/**
 * `X → X` (`defer_attention`): the pass had no time left to decide this record (its `reconcile` would
 * not end inside the pass), so it looks again at `nextAt` and moves on; the next pass starts behind the
 * records that were due before it. Counts the deferrals, which set the backoff.
 */
export async function deferDecision(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  nextAt: number,
): Promise<WriteResult> {
  return postpone(deps, req, record, nextAt, { reconcile_deferrals: (record.reconcile_deferrals ?? 0) + 1 });
}

/** The one write of every `defer_attention`: a new attention time, the state kept. */
async function postpone(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  nextAt: number,
  extra: Partial<OperationRecord> = {},
  expect: Partial<Expectation> = {},
): Promise<WriteResult> {
  return deps.store.transition(record, {
    transition: 'defer_attention',
    expect: {
      states: [record.state],
      attempt: record.attempt,
      reservationId: record.reservation_id,
      ...(record.attention_at === undefined ? {} : { attentionAt: record.attention_at }),
      ...expect,
    },
    set: { attention_at: nextAt, updated_at: iso(req.now), ...extra },
  });
}

async function write(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  w: TransitionWrite,
  extra: { code?: string; durationMs?: number; by?: string | undefined } = {},
): Promise<WriteResult> {
  if (w.set.result !== undefined || w.set.result_ref !== undefined) await placeResultOf(deps, record, w);
  if (w.to !== undefined) {
    // `w` is each caller's own literal: the history entry goes on it instead of on a copy.
    const history: HistoryEntry = {
      // The write's own time: a commit lands when its attempt ended (its `updated_at`, read from the
      // clock then), not when the request that started the attempt began.
      at: w.set.updated_at ?? iso(req.now),
      from: record.state,
      to: w.to,
      attempt: w.set.attempt ?? record.attempt,
      // Who wrote it; for an operation its caller executes, the principal, never the claim's owner.
      by:
        extra.by ??
        w.set.lease_owner ??
        w.set.resolved_by ??
        w.set.reconciled_by ??
        w.set.approval?.by ??
        deps.workerId,
    };
    if (extra.code !== undefined) history.code = extra.code;
    w.history = history;
  }
  // Only where the engine sends events itself: on AWS the stream does, and the copy is not made.
  if (w.to !== undefined && deps.events !== undefined) {
    const after: OperationRecord = { ...record, ...w.set, state: w.to };
    for (const attr of w.remove ?? []) delete after[attr];
    const unsent = unsentEventsWith(deps, record.unsent_events, record.state, after);
    if (unsent !== undefined) w.set.unsent_events = unsent;
  }
  const result = await deps.store.transition(record, w);
  if (result.ok && w.to !== undefined) {
    logLine(deps, req, result.record, record.state, w.to, tool, {
      // A write that sets its outcome code names it on its line too (attempts_exhausted).
      code: extra.code ?? w.set.outcome_code ?? null,
      durationMs: extra.durationMs,
    });
  }
  return result;
}

/** The fields that hold a record's result, one of them at a time. */
const RESULT_FIELDS = ['result', 'result_ref', 'result_unavailable'] as const;

/**
 * Puts a write's result where it is kept (engine/payloads.ts `placeResult`), before the commit that
 * names it: in the item, or in the object store with `result_ref`. Once per write literal: a commit
 * tried again (a lost response, a record moved by the reconciler) finds it placed and writes the same
 * fields. Whatever the record held before in the fields not set is removed, so a record never holds
 * two results.
 */
async function placeResultOf(deps: LedgerDeps, record: OperationRecord, w: TransitionWrite): Promise<void> {
  const set = w.set;
  if (set.result !== undefined && set.result_ref === undefined && set.result_unavailable === undefined) {
    const placed = await placeResult(deps, record, set.result);
    delete set.result;
    Object.assign(set, placed);
  }
  const stale = RESULT_FIELDS.filter(
    (field) => set[field] === undefined && record[field] !== undefined && !(w.remove ?? []).includes(field),
  );
  if (stale.length > 0) w.remove = [...(w.remove ?? []), ...stale];
}

/** One transition line, built in one literal in the order of the contract's fields. */
function line(
  record: OperationRecord,
  tool: AnyTool | undefined,
  req: RequestContext,
  fields: {
    attempt: number;
    before: OperationState | null;
    after: OperationState;
    replayed: boolean;
    code: string | null;
    durationMs: number;
  },
): TransitionLogLine {
  return {
    event_time: new Date().toISOString(),
    tenant: record.tenant,
    agent_run_id: record.agent_run_id ?? null,
    operation_id: record.operation_id,
    tool_name: record.tool,
    arguments_digest: record.arguments_digest,
    attempt_number: fields.attempt,
    state_before: fields.before,
    state_after: fields.after,
    replayed: fields.replayed,
    target_class: targetClass(tool, record.tool),
    outcome_code: fields.code,
    duration_ms: fields.durationMs,
    request_id: req.requestId,
  };
}

function logLine(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  before: OperationState | null,
  after: OperationState,
  tool: AnyTool | undefined,
  extra: { code: string | null; durationMs?: number | undefined },
): void {
  publishEvent(deps, before, record);
  emitLine(
    deps,
    line(record, tool, req, {
      attempt: record.attempt,
      before,
      after,
      replayed: false,
      code: extra.code,
      durationMs: extra.durationMs ?? Math.max(0, deps.clock() - req.now),
    }),
  );
}

/**
 * Logs a request that changed nothing (a replay, a conflict, an in-progress answer) in the same shape
 * as a transition, so one query finds every touch of an operation.
 */
export function logObservation(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool | undefined,
  code: string,
  replayed: boolean,
): void {
  emitLine(
    deps,
    line(record, tool, req, {
      attempt: record.attempt,
      before: record.state,
      after: record.state,
      replayed,
      code,
      durationMs: Math.max(0, deps.clock() - req.now),
    }),
  );
}

/**
 * The record's unsent events with the event of this write added, where the engine sends events itself
 * (local mode): the event is written with its transition, in the same conditional write, so a crash
 * before the send leaves it on the record for the next start to send (at least once, same ID).
 * Undefined when the write makes no event (or events go from the table's stream).
 *
 *     write ⟨state, unsent_events += E⟩ ──send E──▶ clear E        crash anywhere ─▶ next start sends E
 */
function unsentEventsWith(
  deps: LedgerDeps,
  unsent: OperationRecord['unsent_events'],
  before: OperationState | null,
  after: OperationRecord,
): OperationRecord['unsent_events'] {
  if (deps.events === undefined) return undefined;
  const event = completionEventOf(before, after);
  if (event === undefined) return undefined;
  return { ...unsent, [event.event_id]: event };
}

/**
 * Sends the completion event of a transition someone waits for, where the deployment sends them from
 * the engine (local mode), then forgets it on the record; a failed send is logged, never the
 * transition's failure, and the event stays on the record for the next start.
 */
function publishEvent(deps: LedgerDeps, before: OperationState | null, record: OperationRecord): void {
  const sink = deps.events;
  if (sink === undefined) return;
  const event = completionEventOf(before, record);
  if (event === undefined) return;
  sink
    .publish([event])
    .then(() => deps.store.clearUnsentEvent({ pk: record.pk, sk: record.sk }, event.event_id))
    .catch((error: unknown) => {
      logger.warn('completion event not sent', {
        tenant: record.tenant,
        operation_id: record.operation_id,
        event_id: event.event_id,
        error_class: errorClass(error),
      });
    });
}

/**
 * Writes one transition line and tells the request's operation span the same identities, states and
 * codes (functions/observability/tracing.ts): spans and log lines never disagree.
 */
function emitLine(deps: LedgerDeps, entry: TransitionLogLine): void {
  traceTransition(entry);
  deps.log(entry);
}

/** The coarse target label of a tool for logs. */
export function targetClass(tool: AnyTool | undefined, toolName: string): string {
  return tool?.targetClass ?? toolName.split('.')[0] ?? 'unknown';
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
