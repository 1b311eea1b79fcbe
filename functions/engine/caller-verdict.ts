import { LEDGER_METRICS } from '../contract/metrics';
import { downstreamKey } from '../domain/downstream-key';
import { StateChangedError, ValidationError } from '../domain/errors';
import { assertIJsonValue } from '../domain/i-json';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import { keptResult, MAX_RESULT_BYTES } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { getOperation } from './read-operations';
import { CALLER_VERDICTS, type CallerVerdict, recordCallerVerdict } from './transitions';

/** `POST /v1/operations/{id}/reconciliation` as the front door hands it on. */
export interface CallerVerdictRequest {
  tenant: string;
  /** Any agent of the tenant: recorded as `reconciled_by`. */
  principal: string;
  operationId: string;
  attempt: unknown;
  verdict: unknown;
  result?: unknown;
  /** The downstream key the caller checked the target with: binds the verdict to that reservation. */
  downstreamKey?: unknown;
}

/**
 * A caller's verdict on an uncertain attempt of an operation its caller executes (the contract, §14):
 * `applied` → `succeeded` (`reconciled: true`, `reconciled_by`), `not_applied` → `failed_retryable`,
 * whose next claim runs the next attempt with the same downstream key (never enqueued). Only for
 * operations their caller executes, only from `uncertain` or `needs_reconciliation`, only at the
 * attempt named, and, when `downstream_key` is sent, only for the reservation it belongs to (a delayed
 * verdict never lands on a new operation that reused an expired key). The same verdict again is
 * idempotent; anything else is `state_changed`.
 *
 * ```
 * caller: verdict not_applied @1 ──▶ failed_retryable @1 ──▶ (its claim) pending @2 ──▶ …
 * the same verdict retried (lost answer), after the claim of @2: ──▶ 409 state_changed, @2 stands
 * ```
 */
export async function decideCallerVerdict(
  deps: LedgerDeps,
  req: RequestContext,
  request: CallerVerdictRequest,
): Promise<{ record: OperationRecord; changed: boolean }> {
  const verdict = request.verdict;
  if (verdict !== 'applied' && verdict !== 'not_applied') {
    throw new ValidationError('verdict must be "applied" or "not_applied"', [
      { path: '$.verdict', message: 'invalid' },
    ]);
  }
  if (!Number.isSafeInteger(request.attempt) || (request.attempt as number) < 1) {
    throw new ValidationError('attempt must be the attempt that was checked (an integer from 1)', [
      { path: '$.attempt', message: 'invalid' },
    ]);
  }
  const attempt = request.attempt as number;
  let resultJson: string | undefined;
  if (verdict === 'applied') {
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
    throw new ValidationError('result is only accepted with verdict "applied"', [
      { path: '$.result', message: 'invalid' },
    ]);
  }
  const record = await getOperation(deps, req, request.tenant, request.operationId);
  if (!isCallerExecuted(record)) {
    throw new StateChangedError('only an operation its caller executes takes a caller’s verdict', {
      state: record.state,
    });
  }
  if (
    request.downstreamKey !== undefined &&
    request.downstreamKey !== downstreamKey(record.tenant, record.operation_id, record.reservation_id)
  ) {
    throw new StateChangedError('the downstream key names another reservation of this operation ID', {
      state: record.state,
    });
  }
  if (isSameVerdict(record, verdict, attempt)) return { record, changed: false };
  if (record.state !== 'uncertain' && record.state !== 'needs_reconciliation') {
    throw new StateChangedError('only an uncertain or needs_reconciliation operation takes a verdict', {
      state: record.state,
    });
  }
  if (record.attempt !== attempt) {
    throw new StateChangedError('the operation has moved to another attempt', {
      state: record.state,
      attempt: record.attempt,
    });
  }
  const decision: CallerVerdict = { verdict, principal: request.principal, attempt };
  if (resultJson !== undefined) decision.result = resultJson;
  const result = await recordCallerVerdict(deps, req, record, decision);
  if (!result.ok) {
    if (result.current && isSameVerdict(result.current, verdict, attempt)) {
      return { record: result.current, changed: false };
    }
    throw new StateChangedError('the operation changed while the verdict was recorded', {
      state: result.current?.state,
    });
  }
  const latency = Math.max(0, req.now - Date.parse(record.updated_at));
  deps.metrics.latency(LEDGER_METRICS.reconciliationLatency, record.tool, latency);
  deps.metrics.count(LEDGER_METRICS.reconciliations, record.tool, 1, CALLER_VERDICTS[verdict].code);
  return { record: result.record, changed: true };
}

/** The record carries this verdict on this attempt already (by any agent): repeating it is idempotent. */
function isSameVerdict(record: OperationRecord, verdict: CallerVerdict['verdict'], attempt: number): boolean {
  const { to, code } = CALLER_VERDICTS[verdict];
  return (
    record.state === to &&
    record.attempt === attempt &&
    record.reconciled_by !== undefined &&
    record.outcome_code === code
  );
}
