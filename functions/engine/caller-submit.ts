import { randomUUID } from 'node:crypto';
import { operationKey } from '../contract/keys';
import { LEDGER_METRICS } from '../contract/metrics';
import { CALLER_MAX_ATTEMPTS, callerToolDecision } from '../domain/caller-tools';
import { claimOwner, newClaimToken } from '../domain/claim-token';
import { downstreamKey } from '../domain/downstream-key';
import { CallerToolNotAllowedError, IdempotencyConflictError } from '../domain/errors';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import type { CallerPolicy } from '../domain/policy';
import { isTerminal } from '../domain/states';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { type CallerCall, prepareCallerCall } from './prepare-caller-call';
import { accepted, reportOnly } from './submit-operation';
import type { SubmitResult } from './submit-result';
import {
  type Caller,
  callerLease,
  claimByCaller,
  exhaustAttempts,
  logObservation,
  reserveForCaller,
} from './transitions';

/**
 * The claim of an operation its caller executes (the contract, §14): `POST /v1/operations` with
 * `"execution": "caller"`. The ledger keeps the identity, digest, approval, attempts and lease; the
 * caller runs the effect and reports it. Every other answer is the one a ledger-executed call gets.
 *
 * ```
 *  new, no approval ──reserve pending @1 (claim)──────────────▶ 200 + claim
 *  new, approval ─────reserve awaiting_approval ──────────────▶ 202 ─approve▶ queued (never enqueued)
 *  queued | failed_retryable (attempts left) ──claim @n+1─────▶ 200 + claim
 *  failed_retryable (none left) ──exhaust─────────────────────▶ 201
 *  pending, live claim: same claim_id ─▶ 200 + the same claim; otherwise ─▶ 409 operation_in_progress
 *  terminal ▶ 201 replay · other digest ▶ 422 · awaiting_approval | uncertain | needs_reconciliation ▶ 202
 * ```
 */

/** Defaults of a caller operation's policy (the contract, §14). */
export const CALLER_DEFAULTS = { leaseSeconds: 60, maxAttempts: 3 } as const;

/** Bounds of `lease_seconds` (the contract, §14). */
export const CALLER_LEASE_SECONDS = { min: 1, max: 900 } as const;

/** What a claim request asks for; the deployment may force more (approval) or less (attempts). */
export interface CallerOptions {
  leaseSeconds?: number;
  requiresApproval?: boolean;
  downstreamIdempotent?: boolean;
  maxAttempts?: number;
  /** The caller's identity of this claim request: the same claim comes back for it while live. */
  claimId?: string;
}

/** One claim request as the front door hands it to the engine. */
export interface CallerSubmitRequest extends Caller {
  operationId: unknown;
  tool: unknown;
  arguments: unknown;
  options: CallerOptions;
}

/** A claim: what only the request that won it is given. */
export interface Claim {
  /** The secret that heartbeats and the outcome must carry. */
  token: string;
  attempt: number;
  /** Epoch ms. */
  leaseExpiresAt: number;
  downstreamKey: string;
}

/** What became of a claim request: a claim (200), or any answer a ledger-executed call gets. */
export type CallerSubmitResult = SubmitResult | { kind: 'claimed'; record: OperationRecord; claim: Claim };

/**
 * Handles one claim request.
 *
 * @example
 * ```ts
 * const out = await submitCallerOperation(deps, req, {
 *   tenant: 'acme', principal: 'agent-1', operationId: 'run-42-step-3',
 *   tool: 'crm.create_contact', arguments: { email: 'a@example.com' }, options: { leaseSeconds: 30 },
 * });
 * if (out.kind === 'claimed') await runMyEffect(out.claim.downstreamKey);
 * ```
 */
export async function submitCallerOperation(
  deps: LedgerDeps,
  req: RequestContext,
  request: CallerSubmitRequest,
): Promise<CallerSubmitResult> {
  const call = prepareCallerCall(deps.tools, request.operationId, request.tool, request.arguments);
  const decision = callerToolDecision(deps.config.callerTools, request.tenant, call.toolName);
  if (!decision.allowed) throw new CallerToolNotAllowedError();
  const options = request.options;
  // A request can ask for more safety, never less: approval is OR'ed, the attempts capped.
  const policy: CallerPolicy = {
    execution: 'caller',
    requires_approval: options.requiresApproval === true || decision.requiresApproval,
    downstream_idempotent: options.downstreamIdempotent === true,
    max_attempts: Math.max(
      CALLER_MAX_ATTEMPTS.min,
      Math.min(
        options.maxAttempts ?? CALLER_DEFAULTS.maxAttempts,
        decision.maxAttempts ?? CALLER_MAX_ATTEMPTS.max,
      ),
    ),
    lease_seconds: options.leaseSeconds ?? CALLER_DEFAULTS.leaseSeconds,
  };
  const caller: Caller = { tenant: request.tenant, principal: request.principal };
  if (request.agentRunId !== undefined) caller.agentRunId = request.agentRunId;

  const cached = deps.cache.get(operationKey(request.tenant, call.operationId).pk, req.now);
  if (cached) return existingRecord(deps, req, call, cached, request);

  const reservationId = randomUUID();
  if (policy.requires_approval) {
    const reservation = await reserveForCaller(
      deps,
      req,
      { call, policy, reservationId },
      caller,
      'awaiting_approval',
    );
    if (reservation.created) return accepted(deps, reservation.record, false);
    return existingRecord(deps, req, call, reservation.existing, request);
  }
  const token = newClaimToken(1, reservationId, options.claimId);
  const lease = callerLease(token, req.now, policy.lease_seconds);
  const reservation = await reserveForCaller(
    deps,
    req,
    { call, policy, reservationId, lease },
    caller,
    'pending',
  );
  if (reservation.created) return claimed(reservation.record, token);
  return existingRecord(deps, req, call, reservation.existing, request);
}

/** A record exists (the contract, §3 step 4, as §14 reads it for a caller). */
async function existingRecord(
  deps: LedgerDeps,
  req: RequestContext,
  call: CallerCall,
  record: OperationRecord,
  request: CallerSubmitRequest,
  depth = 0,
): Promise<CallerSubmitResult> {
  if (record.arguments_digest !== call.digest) {
    deps.metrics.count(LEDGER_METRICS.conflicts, call.toolName);
    logObservation(deps, req, record, undefined, 'idempotency_key_reused', false);
    throw new IdempotencyConflictError(record.operation_id, record.arguments_digest);
  }
  if (isTerminal(record.state)) {
    deps.cache.put(record);
    deps.metrics.count(LEDGER_METRICS.replays, record.tool);
    logObservation(deps, req, record, undefined, 'replayed', true);
    return { kind: 'completed', record, replayed: true };
  }
  // Reserved for the deployment to run (a tool of that name was registered then): never claimed by a caller.
  if (!isCallerExecuted(record)) return reportOnly(deps, req, record, undefined);
  const claimId = request.options.claimId;
  if (record.state === 'pending' && claimId !== undefined && (record.lease_expires_at ?? 0) > req.now) {
    // The answer to this claim request was lost: the same claim_id gets the same claim back.
    const token = newClaimToken(record.attempt, record.reservation_id, claimId);
    if (claimOwner(token) === record.lease_owner) {
      logObservation(deps, req, record, undefined, 'claim_returned', false);
      return claimed(record, token);
    }
  }
  if (depth < 2 && (record.state === 'queued' || record.state === 'failed_retryable')) {
    if (record.state === 'failed_retryable' && record.attempt >= record.max_attempts) {
      const exhausted = await exhaustAttempts(deps, req, record, undefined);
      if (exhausted.ok) {
        // Closed (201), or, if an attempt may have applied, in front of an operator (202).
        return isTerminal(exhausted.record.state)
          ? { kind: 'completed', record: exhausted.record, replayed: false }
          : reportOnly(deps, req, exhausted.record, undefined);
      }
      return again(deps, req, call, record, exhausted.current, request, depth);
    }
    const token = newClaimToken(record.attempt + 1, record.reservation_id, claimId);
    const policy = record.policy as CallerPolicy;
    // The lease is the record's, fixed at reservation: this request's lease_seconds does not change it.
    const lease = callerLease(token, req.now, policy.lease_seconds);
    const result = await claimByCaller(deps, req, record, lease, request.principal);
    if (result.ok) return claimed(result.record, token);
    return again(deps, req, call, record, result.current, request, depth);
  }
  return reportOnly(deps, req, record, undefined);
}

/** A write lost to another writer: answer for the record as it is now. */
function again(
  deps: LedgerDeps,
  req: RequestContext,
  call: CallerCall,
  record: OperationRecord,
  current: OperationRecord | undefined,
  request: CallerSubmitRequest,
  depth: number,
): Promise<CallerSubmitResult> {
  if (!current) throw new Error(`operation record ${record.operation_id} vanished while being claimed`);
  return existingRecord(deps, req, call, current, request, depth + 1);
}

function claimed(record: OperationRecord, token: string): CallerSubmitResult {
  return {
    kind: 'claimed',
    record,
    claim: {
      token,
      attempt: record.attempt,
      leaseExpiresAt: record.lease_expires_at ?? 0,
      downstreamKey: downstreamKey(record.tenant, record.operation_id, record.reservation_id),
    },
  };
}
