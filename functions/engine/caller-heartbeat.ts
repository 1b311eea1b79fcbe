import { claimOwner, claimTokenAttempt } from '../domain/claim-token';
import { downstreamKey } from '../domain/downstream-key';
import { StateChangedError, ValidationError } from '../domain/errors';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import type { CallerPolicy } from '../domain/policy';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { getOperation } from './read-operations';
import { extendLease } from './transitions';

/** A heartbeat: the claim's token, and how long from now the claim should hold. */
export interface HeartbeatRequest {
  tenant: string;
  operationId: string;
  token: unknown;
  /** @default the record's `lease_seconds`, fixed at reservation */
  leaseSeconds?: number;
}

/** The claim after a heartbeat (never the token: the caller has it). */
export interface ExtendedClaim {
  record: OperationRecord;
  attempt: number;
  /** Epoch ms. */
  leaseExpiresAt: number;
  downstreamKey: string;
}

/**
 * `POST /v1/operations/{id}/lease` (the contract, §14): extends a live claim of an operation its caller
 * executes to `now + leaseSeconds`. Only while the record is `pending` at the token's attempt, under
 * the token's claim, with its lease not yet expired; anything else is `state_changed` (the claim is
 * lost: the caller aborts its effect). A heartbeat repeated after a lost answer lands again.
 *
 * ```
 *  caller ── lease {token} ─▶ pending @n, owner = hash(token), lease live ─▶ lease = now + s ─▶ 200
 *                             anything else (expired, superseded, another token, terminal) ───▶ 409
 * ```
 */
export async function extendClaim(
  deps: LedgerDeps,
  req: RequestContext,
  request: HeartbeatRequest,
): Promise<ExtendedClaim> {
  const attempt = claimTokenAttempt(request.token);
  if (attempt === undefined) {
    throw new ValidationError('token must be a claim token', [{ path: '$.token', message: 'invalid' }]);
  }
  const owner = claimOwner(request.token as string);
  const record = await getOperation(deps, req, request.tenant, request.operationId);
  if (!holdsLiveClaim(record, owner, attempt, req.now)) {
    throw new StateChangedError('the claim is no longer live', { state: record.state });
  }
  const seconds = request.leaseSeconds ?? (record.policy as CallerPolicy).lease_seconds;
  const expiresAt = req.now + seconds * 1000;
  const result = await extendLease(deps, req, record, { owner, expiresAt });
  if (!result.ok) {
    throw new StateChangedError('the claim ended while its lease was extended', {
      state: result.current?.state,
    });
  }
  return {
    record: result.record,
    attempt,
    leaseExpiresAt: expiresAt,
    downstreamKey: downstreamKey(record.tenant, record.operation_id, record.reservation_id),
  };
}

/** The record is a caller's, `pending` at `attempt` under `owner`'s claim, and the lease is live. */
function holdsLiveClaim(record: OperationRecord, owner: string, attempt: number, now: number): boolean {
  return (
    isCallerExecuted(record) &&
    record.state === 'pending' &&
    record.attempt === attempt &&
    record.lease_owner === owner &&
    (record.lease_expires_at ?? 0) > now
  );
}
