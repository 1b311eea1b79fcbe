import { isDigest } from '../domain/digest';
import { AccessError, ApprovalMismatchError, StateChangedError, ValidationError } from '../domain/errors';
import { type ApprovalRecord, isCallerExecuted, type OperationRecord } from '../domain/operation';
import { isSelfApproval } from '../domain/principal';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { getOperation } from './read-operations';
import { enqueueQuietly, toolOf } from './stored-call';
import { approve, reject } from './transitions';

/** An approver's decision on one operation. */
export interface ApprovalRequest {
  tenant: string;
  /** Principal label of the approver. */
  principal: string;
  /** The approver's IAM unique ID, where known (AWS): compared with a queue sender's. */
  principalUniqueId?: string;
  operationId: string;
  decision: unknown;
  argumentsDigest: unknown;
}

/** The record after the decision, and whether this request made it (false: the same decision again). */
export interface ApprovalResult {
  record: OperationRecord;
  changed: boolean;
}

/**
 * Applies an approval (the contract, §5): bound to the operation ID and the digest. Approve moves
 * `awaiting_approval → queued` and enqueues (an operation its caller executes is not enqueued: it waits
 * for its caller, §14); reject moves it to `rejected`. The same decision again is
 * idempotent; the opposite decision, or any decision once the record left `awaiting_approval` for
 * another reason, is `state_changed`. A digest that is not the record's is `approval_mismatch`, so an
 * approval can never transfer to other arguments.
 *
 * ```
 *  awaiting_approval ──approve(digest = record's)──▶ queued ──▶ enqueue
 *          └────────────reject / deadline─────────▶ rejected
 * ```
 */
export async function decideApproval(
  deps: LedgerDeps,
  req: RequestContext,
  request: ApprovalRequest,
): Promise<ApprovalResult> {
  if (request.decision !== 'approve' && request.decision !== 'reject') {
    throw new ValidationError('decision must be "approve" or "reject"', [
      { path: '$.decision', message: 'invalid' },
    ]);
  }
  if (!isDigest(request.argumentsDigest)) {
    throw new ValidationError('arguments_digest must be a v1 digest', [
      { path: '$.arguments_digest', message: 'invalid' },
    ]);
  }
  const decision = request.decision;
  const record = await getOperation(deps, req, request.tenant, request.operationId);
  if (record.arguments_digest !== request.argumentsDigest)
    throw new ApprovalMismatchError(record.arguments_digest);
  if (
    record.approval &&
    record.approval.decision === decision &&
    record.approval.arguments_digest === request.argumentsDigest
  ) {
    return { record, changed: false };
  }
  if (record.state !== 'awaiting_approval') {
    throw new StateChangedError('the operation is no longer awaiting approval', { state: record.state });
  }
  // The contract (§5) forbids approving one's own operation; withdrawing it (reject) is always allowed. A second
  // session name of the requester's own role is still the requester (the contract, §1, principal); so
  // is the role that sent the work through the queue, and a requester the queue did not identify
  // cannot be told apart from the approver.
  if (
    decision === 'approve' &&
    isSelfApproval(record, { principal: request.principal, uniqueId: request.principalUniqueId }) &&
    !deps.config.allowSelfApproval
  ) {
    throw new AccessError('self_approval', 'the requester of an operation may not approve it');
  }
  if (record.approval_deadline !== undefined && record.approval_deadline <= req.now) {
    throw new StateChangedError('the approval deadline has passed', { state: record.state });
  }
  const approval: ApprovalRecord = {
    decision,
    by: request.principal,
    at: new Date(req.now).toISOString(),
    arguments_digest: request.argumentsDigest,
  };
  const tool = toolOf(deps, record);
  const result =
    decision === 'approve'
      ? await approve(deps, req, record, tool, approval)
      : await reject(deps, req, record, tool, approval);
  if (!result.ok) {
    const current = result.current;
    if (
      current?.approval?.decision === decision &&
      current.approval.arguments_digest === request.argumentsDigest
    ) {
      return { record: current, changed: false };
    }
    // The write's condition holds it to the deadline at the time it was sent: answer as above.
    if (
      current?.state === 'awaiting_approval' &&
      current.reservation_id === record.reservation_id &&
      current.approval_deadline !== undefined &&
      current.approval_deadline <= deps.clock()
    ) {
      throw new StateChangedError('the approval deadline has passed', { state: current.state });
    }
    throw new StateChangedError('the operation changed while the decision was recorded', {
      state: current?.state,
    });
  }
  // A caller's operation, approved, waits for its caller's next request (the contract, §14): never enqueued.
  if (decision === 'approve' && !isCallerExecuted(result.record)) await enqueueQuietly(deps, result.record);
  return { record: result.record, changed: true };
}
