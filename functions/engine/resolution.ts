import { StateChangedError, ValidationError } from '../domain/errors';
import { assertIJsonValue } from '../domain/i-json';
import type { OperationRecord } from '../domain/operation';
import type { OperationState } from '../domain/states';
import { keptResult, MAX_RESULT_BYTES } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { getOperation } from './read-operations';
import { toolOf } from './stored-call';
import { RESOLUTION_TARGETS, resolveByOperator } from './transitions';

/** An operator's resolution of an operation the reconciler could not decide. */
export interface ResolutionRequest {
  tenant: string;
  principal: string;
  operationId: string;
  outcome: unknown;
  result?: unknown;
  /**
   * The attempt of the record the operator checked (required). A resolution is a verdict on one
   * attempt's effect; without it, a retried `not_applied` would land on the next attempt and start
   * yet another one.
   */
  attempt: unknown;
}

/**
 * Resolves `uncertain | needs_reconciliation` by an operator (the contract, §5): applied → succeeded (with
 * `resolved_by`), not_applied → failed_retryable (retried), failed → failed_terminal. The same
 * resolution again (same attempt, same outcome) is idempotent; a record that changed meanwhile is
 * `state_changed`. It applies only while the record is still at `attempt`:
 *
 * ```
 * operator: not_applied @1 ──► failed_retryable @1 ──► (retry claims) pending @2 ──► uncertain @2
 * the same request retried (lost response):  not_applied @1 ──► 409 state_changed, attempt 2 stands
 * ```
 */
export async function resolveOperation(
  deps: LedgerDeps,
  req: RequestContext,
  request: ResolutionRequest,
): Promise<{ record: OperationRecord; changed: boolean }> {
  const outcome = request.outcome;
  if (outcome !== 'applied' && outcome !== 'not_applied' && outcome !== 'failed') {
    throw new ValidationError('outcome must be "applied", "not_applied" or "failed"', [
      { path: '$.outcome', message: 'invalid' },
    ]);
  }
  if (request.attempt === undefined) {
    throw new ValidationError('attempt is required: the attempt of the record that was checked', [
      { path: '$.attempt', message: 'required' },
    ]);
  }
  if (!Number.isSafeInteger(request.attempt) || (request.attempt as number) < 0) {
    throw new ValidationError('attempt must be a non-negative integer', [
      { path: '$.attempt', message: 'invalid' },
    ]);
  }
  const attempt = request.attempt as number;
  let resultJson: string | undefined;
  if (outcome === 'applied') {
    const value = request.result === undefined ? null : request.result;
    assertIJsonValue(value, 32, '$.result');
    resultJson = JSON.stringify(value);
    if (Buffer.byteLength(resultJson, 'utf8') > MAX_RESULT_BYTES) {
      throw new ValidationError(`result is larger than ${MAX_RESULT_BYTES} bytes`, [
        { path: '$.result', message: 'too large' },
      ]);
    }
    resultJson = keptResult(resultJson);
  } else if (request.result !== undefined) {
    throw new ValidationError('result is only accepted with outcome "applied"', [
      { path: '$.result', message: 'invalid' },
    ]);
  }
  const to = RESOLUTION_TARGETS[outcome];
  const record = await getOperation(deps, req, request.tenant, request.operationId);
  if (isSameResolution(record, to, outcome, attempt)) return { record, changed: false };
  if (record.state !== 'uncertain' && record.state !== 'needs_reconciliation') {
    throw new StateChangedError('only uncertain or needs_reconciliation operations can be resolved', {
      state: record.state,
    });
  }
  if (record.attempt !== attempt) {
    throw new StateChangedError('the operation has moved to another attempt', {
      state: record.state,
      attempt: record.attempt,
    });
  }
  const result = await resolveByOperator(deps, req, record, toolOf(deps, record), {
    outcome,
    principal: request.principal,
    attempt,
    ...(resultJson === undefined ? {} : { result: resultJson }),
  });
  if (!result.ok) {
    if (result.current && isSameResolution(result.current, to, outcome, attempt)) {
      return { record: result.current, changed: false };
    }
    throw new StateChangedError('the operation changed while it was resolved', {
      state: result.current?.state,
    });
  }
  return { record: result.record, changed: true };
}

/**
 * The record already carries this resolution of this attempt (by any operator): repeating it is
 * idempotent (the contract, §5). The same outcome on a later attempt is a different verdict, not a repeat.
 */
function isSameResolution(
  record: OperationRecord,
  to: OperationState,
  outcome: string,
  attempt: number,
): boolean {
  return (
    record.state === to &&
    record.attempt === attempt &&
    record.resolved_by !== undefined &&
    record.outcome_code === `resolved_${outcome}`
  );
}
