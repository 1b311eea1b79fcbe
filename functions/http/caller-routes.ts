import type * as z from 'zod/mini';
import { StateChangedError } from '../domain/errors';
import { toView } from '../domain/operation';
import { extendClaim } from '../engine/caller-heartbeat';
import { recordCallerOutcome } from '../engine/caller-outcome';
import { type CallerOptions, submitCallerOperation } from '../engine/caller-submit';
import { decideCallerVerdict } from '../engine/caller-verdict';
import { loadedAnswer, loadResult } from '../engine/payloads';
import { LeaseBody, OutcomeBody, parseBody, type SubmitBody, VerdictBody } from './bodies';
import { operationIdParam, stateChanged, submitResponse } from './operation-answers';
import { MAX_OUTCOME_BODY_BYTES } from './request';
import { type ApiResponse, operationLocation, operationResponse, respond } from './responses';
import type { RouteContext } from './route-context';

/**
 * The HTTP side of operations their caller executes (the contract, §14): the claim (a
 * `POST /v1/operations` with `"execution": "caller"`, handed here by the submit route), the heartbeat,
 * the outcome and the verdict. The claim token is in the body of the one answer that won the claim and
 * nowhere else: no view, listing, problem or log line carries it.
 */

/**
 * The claim: 200 with the operation and `claim` for the request that won it, otherwise the answer a
 * ledger-executed call gets (201 replay, 202, 409 in progress, 422 conflict). `Prefer: respond-async`
 * means nothing here: the caller runs the effect.
 */
export async function submitCaller(
  { deps, req, identity }: RouteContext,
  operationId: string,
  body: z.output<typeof SubmitBody>,
): Promise<ApiResponse> {
  const options: CallerOptions = {};
  if (body.lease_seconds !== undefined) options.leaseSeconds = body.lease_seconds;
  if (body.requires_approval !== undefined) options.requiresApproval = body.requires_approval;
  if (body.downstream_idempotent !== undefined) options.downstreamIdempotent = body.downstream_idempotent;
  if (body.max_attempts !== undefined) options.maxAttempts = body.max_attempts;
  if (body.claim_id !== undefined) options.claimId = body.claim_id;
  const result = await submitCallerOperation(deps, req, {
    tenant: identity.tenant,
    principal: identity.principal,
    operationId,
    tool: body.tool,
    arguments: body.arguments,
    options,
    ...(body.agent_run_id === undefined ? {} : { agentRunId: body.agent_run_id }),
  });
  if (result.kind !== 'claimed') return submitResponse(await loadedAnswer(deps, result), req.requestId);
  const { claim } = result;
  return respond(
    200,
    {
      ...toView(result.record),
      claim: {
        token: claim.token,
        attempt: claim.attempt,
        lease_expires_at: new Date(claim.leaseExpiresAt).toISOString(),
        downstream_key: claim.downstreamKey,
      },
    },
    { headers: { Location: operationLocation(result.record.operation_id) } },
  );
}

/** `POST /v1/operations/{id}/lease`: the claim's heartbeat. */
export async function heartbeat(ctx: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity, params } = ctx;
  request.query([]);
  const operationId = operationIdParam(params.id);
  const body = parseBody(LeaseBody, request.jsonBody());
  try {
    const claim = await extendClaim(deps, req, {
      tenant: identity.tenant,
      operationId,
      token: body.token,
      ...(body.lease_seconds === undefined ? {} : { leaseSeconds: body.lease_seconds }),
    });
    return respond(200, {
      ...toView(claim.record),
      claim: {
        attempt: claim.attempt,
        lease_expires_at: new Date(claim.leaseExpiresAt).toISOString(),
        downstream_key: claim.downstreamKey,
      },
    });
  } catch (error) {
    if (error instanceof StateChangedError) return stateChanged(ctx, operationId, error);
    throw error;
  }
}

/** `POST /v1/operations/{id}/outcome`: the outcome of the caller's attempt. */
export async function outcome(ctx: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity, params } = ctx;
  request.query([]);
  const operationId = operationIdParam(params.id);
  const body = parseBody(OutcomeBody, request.jsonBody(undefined, MAX_OUTCOME_BODY_BYTES));
  try {
    const record = await recordCallerOutcome(deps, req, {
      tenant: identity.tenant,
      principal: identity.principal,
      operationId,
      token: body.token,
      outcome: body.outcome,
      ...('result' in body ? { result: body.result } : {}),
      ...(body.error === undefined ? {} : { error: body.error }),
    });
    return operationResponse(200, await loadResult(deps, record));
  } catch (error) {
    if (error instanceof StateChangedError) return stateChanged(ctx, operationId, error);
    throw error;
  }
}

/** `POST /v1/operations/{id}/reconciliation`: any agent's verdict on an uncertain attempt. */
export async function verdict(ctx: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity, params } = ctx;
  request.query([]);
  const operationId = operationIdParam(params.id);
  const body = parseBody(VerdictBody, request.jsonBody(undefined, MAX_OUTCOME_BODY_BYTES));
  try {
    const { record } = await decideCallerVerdict(deps, req, {
      tenant: identity.tenant,
      principal: identity.principal,
      operationId,
      attempt: body.attempt,
      verdict: body.verdict,
      ...('result' in body ? { result: body.result } : {}),
      ...(body.downstream_key === undefined ? {} : { downstreamKey: body.downstream_key }),
    });
    return operationResponse(200, await loadResult(deps, record));
  } catch (error) {
    if (error instanceof StateChangedError) return stateChanged(ctx, operationId, error);
    throw error;
  }
}
