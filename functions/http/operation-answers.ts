import { LedgerError, OperationIdError, type StateChangedError } from '../domain/errors';
import { toView } from '../domain/operation';
import { assertOperationId } from '../domain/operation-id';
import { loadResult } from '../engine/payloads';
import { getOperation } from '../engine/read-operations';
import type { SubmitResult } from '../engine/submit-result';
import { problemResponse } from './problem';
import { type ApiResponse, operationLocation, operationResponse } from './responses';
import type { RouteContext } from './route-context';

/**
 * Answers several routes share: the status table of a submission, a `state_changed` with the record,
 * and the operation ID of a path.
 */

/** The status table of the contract's §5 for a submission that reached the ledger. */
export function submitResponse(result: SubmitResult, requestId: string, askedAsync = false): ApiResponse {
  const { record } = result;
  const location = operationLocation(record.operation_id);
  switch (result.kind) {
    case 'completed':
      return operationResponse(
        201,
        record,
        { replayed: result.replayed },
        {
          Location: location,
          ...(result.replayed ? { 'Idempotent-Replayed': 'true' } : {}),
        },
      );
    case 'retryable':
      return operationResponse(503, record, {}, { 'Retry-After': String(result.retryAfterSeconds) });
    case 'in_progress':
      return problemResponse(
        new LedgerError('operation_in_progress', 'a worker is running this operation now; retry later'),
        requestId,
        { state: record.state, operation: toView(record) },
        { 'Retry-After': String(result.retryAfterSeconds) },
      );
    case 'accepted':
      return operationResponse(
        202,
        record,
        { replayed: result.replayed },
        {
          Location: location,
          'Retry-After': String(result.retryAfterSeconds),
          ...(result.replayed ? { 'Idempotent-Replayed': 'true' } : {}),
          ...(askedAsync ? { 'Preference-Applied': 'respond-async' } : {}),
        },
      );
  }
}

/**
 * A 409 `state_changed` with the record as it now stands, so the caller sees what happened instead of
 * having to ask. If the record cannot be read, the problem goes out without it.
 */
export async function stateChanged(ctx: RouteContext, operationId: string, error: StateChangedError) {
  let operation: unknown;
  try {
    operation = toView(
      await loadResult(ctx.deps, await getOperation(ctx.deps, ctx.req, ctx.identity.tenant, operationId)),
    );
  } catch {
    operation = undefined;
  }
  return problemResponse(error, ctx.req.requestId, operation === undefined ? {} : { operation });
}

/** Decodes the operation ID captured from a path (one percent-encoded segment) and validates it. */
export function operationIdParam(raw: string | undefined): string {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? '');
  } catch {
    throw new OperationIdError('idempotency_key_invalid', 'the operation ID in the path is not valid');
  }
  assertOperationId(id);
  return id;
}
