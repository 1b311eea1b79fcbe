import { LEDGER_METRICS } from '../contract/metrics';
import { claimOwner, claimTokenAttempt } from '../domain/claim-token';
import { StateChangedError, ValidationError } from '../domain/errors';
import { assertIJsonValue } from '../domain/i-json';
import { isCallerExecuted, type OperationError, type OperationRecord } from '../domain/operation';
import type { OperationState } from '../domain/states';
import { keptResult, MAX_RESULT_BYTES } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { holdsResult } from './payloads';
import { getOperation } from './read-operations';
import { type AttemptOutcome, recordLateOutcome, recordOutcome } from './transitions';

/** The outcomes a caller reports for its attempt: those of an owner's commit. */
export const CALLER_OUTCOMES = ['succeeded', 'failed_terminal', 'failed_retryable', 'uncertain'] as const;

/** One caller outcome. */
export type CallerOutcome = (typeof CALLER_OUTCOMES)[number];

/** A caller's error code: short, plain, safe in logs. */
export const CALLER_ERROR_CODE = /^[a-z0-9_.-]{1,64}$/;

/** Longest stored message of a caller's error, UTF-8 bytes (stored and shown, never logged). */
export const MAX_CALLER_ERROR_MESSAGE_BYTES = 1024;

/** `POST /v1/operations/{id}/outcome` as the front door hands it on. */
export interface CallerOutcomeRequest {
  tenant: string;
  principal: string;
  operationId: string;
  token: unknown;
  outcome: unknown;
  result?: unknown;
  error?: { code: unknown; message?: unknown } | undefined;
}

/**
 * Records the outcome of a caller's attempt (the contract, §14), exactly as an owner's commit (§3
 * step 6): one write conditioned on the attempt and on the claim (`lease_owner` = the token's hash).
 *
 * - `pending`, this claim: the outcome lands (`record_outcome`).
 * - the same attempt moved on by the reconciler, an operator or a verdict (`uncertain`,
 *   `needs_reconciliation`, `failed_retryable`), still this claim: a known outcome (`succeeded`,
 *   `failed_terminal`) still lands (`record_late_outcome`); an unknown one changes nothing (409).
 * - the same outcome again: 200 with the same body.
 * - an attempt that has been superseded, with its authentic token (found among the record's
 *   superseded claims): kept as `late_outcome`, logged and counted, and 409 `state_changed`.
 * - any other token, or a different outcome once terminal: 409 `state_changed`, nothing changes.
 *
 * Returns the record with this attempt's outcome, or throws `state_changed`.
 */
export async function recordCallerOutcome(
  deps: LedgerDeps,
  req: RequestContext,
  request: CallerOutcomeRequest,
): Promise<OperationRecord> {
  const attempt = claimTokenAttempt(request.token);
  if (attempt === undefined) {
    throw new ValidationError('token must be a claim token', [{ path: '$.token', message: 'invalid' }]);
  }
  const outcome = callerOutcome(request, deps.clock() - req.now);
  const owner = claimOwner(request.token as string);
  const record = await getOperation(deps, req, request.tenant, request.operationId);
  if (!isCallerExecuted(record)) throw changed(record, 'the operation is not executed by its caller');
  if (record.attempt === attempt && record.lease_owner === owner) {
    if (isSameOutcome(record, owner, outcome)) return record;
    const lands =
      record.state === 'pending' || (isKnown(outcome.state) && LATE_OUTCOME_STATES.includes(record.state));
    if (!lands) throw changed(record, 'the attempt already has another outcome');
    const after = await recordOutcome(deps, req, record, undefined, { owner }, outcome, {
      by: request.principal,
    });
    if (!isSameOutcome(after, owner, outcome)) throw changed(after, 'the operation changed first');
    if (attempt === 1 && outcome.state !== 'failed_retryable')
      deps.metrics.count(LEDGER_METRICS.firstExecutions, record.tool);
    return after;
  }
  if (attempt < record.attempt && record.superseded_claims?.includes(owner)) {
    const late = record.late_outcome;
    // A late outcome posted again (a lost answer) is kept and counted once.
    if (late?.attempt !== attempt || late.state !== outcome.state) {
      await recordLateOutcome(deps, req, { ...record, attempt }, record, undefined, outcome);
    }
    throw changed(record, 'the attempt has been superseded; its outcome is kept as late_outcome');
  }
  throw changed(record, 'the token is not this operation’s claim');
}

/** States from which an owner's known outcome of the same attempt still lands (the contract, §2). */
const LATE_OUTCOME_STATES: readonly OperationState[] = [
  'uncertain',
  'needs_reconciliation',
  'failed_retryable',
];

function isKnown(state: OperationState): boolean {
  return state === 'succeeded' || state === 'failed_terminal';
}

/** The record holds this claim's outcome, the same one (state, result, error code). */
function isSameOutcome(record: OperationRecord, owner: string, outcome: AttemptOutcome): boolean {
  return (
    record.outcome_by === owner &&
    record.state === outcome.state &&
    holdsResult(record, outcome.result) &&
    record.error?.code === outcome.error?.code
  );
}

function changed(record: OperationRecord, message: string): StateChangedError {
  return new StateChangedError(message, { state: record.state });
}

/**
 * Validates a caller's outcome and shapes it as an owner's: `result` only with `succeeded` (I-JSON, the
 * caller sanitises it; kept whole up to 6 MB, in the item or the object store, see engine/payloads.ts), `error` only without; its code in the record's error,
 * prefixed `caller.` in the outcome code that log lines carry (so a caller's code can never pass for
 * one of the ledger's own), its message stored (at most 1 KiB) and never logged.
 */
function callerOutcome(request: CallerOutcomeRequest, durationMs: number): AttemptOutcome {
  const state = request.outcome;
  if (typeof state !== 'string' || !(CALLER_OUTCOMES as readonly string[]).includes(state)) {
    throw new ValidationError(`outcome must be one of ${CALLER_OUTCOMES.join(', ')}`, [
      { path: '$.outcome', message: 'invalid' },
    ]);
  }
  const outcome = state as CallerOutcome;
  if (outcome === 'succeeded') {
    if (request.error !== undefined) {
      throw new ValidationError('error is only accepted with a failed or uncertain outcome', [
        { path: '$.error', message: 'invalid' },
      ]);
    }
    const value = request.result === undefined ? null : request.result;
    assertIJsonValue(value, 32, '$.result');
    const result = JSON.stringify(value);
    if (Buffer.byteLength(result, 'utf8') > MAX_RESULT_BYTES) {
      throw new ValidationError(`result is larger than ${MAX_RESULT_BYTES} bytes`, [
        { path: '$.result', message: 'too large' },
      ]);
    }
    return { state: outcome, outcomeCode: 'succeeded', result: keptResult(result), durationMs };
  }
  if (request.result !== undefined) {
    throw new ValidationError('result is only accepted with outcome "succeeded"', [
      { path: '$.result', message: 'invalid' },
    ]);
  }
  const code = request.error?.code ?? outcome;
  if (typeof code !== 'string' || !CALLER_ERROR_CODE.test(code)) {
    throw new ValidationError('error.code must match [a-z0-9_.-]{1,64}', [
      { path: '$.error.code', message: 'invalid' },
    ]);
  }
  const message = request.error?.message ?? DEFAULT_MESSAGES[outcome];
  if (typeof message !== 'string' || Buffer.byteLength(message, 'utf8') > MAX_CALLER_ERROR_MESSAGE_BYTES) {
    throw new ValidationError(
      `error.message must be a string of at most ${MAX_CALLER_ERROR_MESSAGE_BYTES} bytes`,
      [{ path: '$.error.message', message: 'invalid' }],
    );
  }
  const error: OperationError = { code, message };
  return { state: outcome, outcomeCode: `caller.${code}`, error, durationMs };
}

/** What a caller's failure says when it sent no message. */
const DEFAULT_MESSAGES: Readonly<Record<Exclude<CallerOutcome, 'succeeded'>, string>> = {
  failed_terminal: 'the caller reported a failure that will not change',
  failed_retryable: 'the caller reported that the effect did not happen',
  uncertain: 'the caller could not tell whether the effect happened',
};
