import { LEDGER_ROLES, LEDGER_ROUTES, type RouteId, routeName } from '../contract/routes';
import { passHoldBackMs } from '../contract/time-budget';
import { AccessError, LedgerError, StateChangedError, ValidationError } from '../domain/errors';
import { toView } from '../domain/operation';
import { parseIdempotencyKey } from '../domain/operation-id';
import { TOOL_NAME_PATTERN } from '../domain/tool';
import { decideApproval } from '../engine/approval';
import { loadedAnswer, loadResult } from '../engine/payloads';
import { getOperation, listOperations } from '../engine/read-operations';
import { passLogFields, reconcilePass, type ShardProgress } from '../engine/reconcile';
import { resolveOperation } from '../engine/resolution';
import { submitOperation } from '../engine/submit-operation';
import { logger } from '../observability/logger';
import { describeTools } from '../tools/describe';
import type { ToolDescription } from '../tools/registry';
import {
  ApprovalBody,
  CALLER_ONLY_FIELDS,
  parseBody,
  ReconciliationBody,
  ResolutionBody,
  SubmitBody,
} from './bodies';
import { heartbeat, outcome, submitCaller, verdict } from './caller-routes';
import type { Role } from './identity';
import { operationIdParam, stateChanged, submitResponse } from './operation-answers';
import { type ApiResponse, operationResponse, respond } from './responses';
import type { RouteContext } from './route-context';
import type { RouteSpec } from './router';

/** One route of the contract's §5: its address and roles from the contract, and its handler. */
export interface Route extends RouteSpec {
  /** The contract's handle of the route. */
  id: RouteId;
  /** Stable name for logs (the pattern, never the concrete path, which holds an operation ID). */
  name: string;
  /** The caller needs at least one of these roles in its tenant, or gets 403 `forbidden`. */
  roles: readonly Role[];
  handle(ctx: RouteContext): Promise<ApiResponse>;
}

/**
 * The handler of each route of the contract (functions/contract/routes.ts), by its handle. Reading an
 * operation and listing tools is open to every role of the tenant, because approvers and operators
 * must see what they decide on; submitting needs `agent`, approving `approver`, resolving, listing the
 * reconciliation queue and running a reconciliation pass `operator`. `POST /mcp` is the MCP front door
 * (functions/mcp/): any role may list tools, and tools/call itself checks for `agent`. A route of the
 * contract without a handler here, or a handler without a route, does not compile.
 */
const HANDLERS: Readonly<Record<RouteId, (ctx: RouteContext) => Promise<ApiResponse>>> = {
  identity: whoAmI,
  submit,
  list,
  read,
  approve,
  resolve,
  lease: heartbeat,
  outcome,
  verdict,
  reconcile: reconcileNow,
  tools,
  mcp,
};

/** The HTTP API (the contract, §5): every route of the contract with its handler, in the contract's order. */
export const ROUTES: readonly Route[] = LEDGER_ROUTES.map((route) => ({
  id: route.id,
  name: routeName(route),
  method: route.method,
  pattern: route.path,
  roles: route.roles,
  handle: HANDLERS[route.id],
}));

/** The MCP front door's module, once loaded. */
let mcpRoute: Promise<typeof import('../mcp/mcp-route')> | undefined;

/**
 * `POST /mcp`: the MCP front door. The MCP SDK's server is loaded by the first call to this route, so
 * that the API's other routes (and its cold start) never pay for it.
 */
async function mcp(context: RouteContext): Promise<ApiResponse> {
  // Kept once loaded: an `import()` is resolved again at every call where modules are not bundled.
  mcpRoute ??= import('../mcp/mcp-route');
  const { handleMcp } = await mcpRoute;
  return handleMcp(context);
}

/**
 * `POST /v1/operations`: run (or replay, or report) one tool call, or, with `"execution": "caller"`,
 * claim an operation its caller executes (functions/http/caller-routes.ts).
 */
async function submit(context: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity } = context;
  request.query([]);
  // The key is checked before the body is read: without an identity there is nothing to validate for.
  const operationId = parseIdempotencyKey(request.headerValues('idempotency-key'));
  const body = parseBody(SubmitBody, request.jsonBody());
  if (body.execution === 'caller') return submitCaller(context, operationId, body);
  const callerOnly = CALLER_ONLY_FIELDS.find((field) => body[field] !== undefined);
  if (callerOnly !== undefined) {
    throw new ValidationError(`${callerOnly} is only accepted with "execution": "caller"`, [
      { path: `$.${callerOnly}`, message: 'only with execution caller' },
    ]);
  }
  if (!TOOL_NAME_PATTERN.test(body.tool)) {
    // Not a name any tool can have; refusing here keeps caller text out of the problem detail.
    throw new LedgerError('tool_unknown', 'no tool of that name is registered');
  }
  const async = request.prefers('respond-async');
  const result = await submitOperation(deps, req, {
    tenant: identity.tenant,
    principal: identity.principal,
    operationId,
    tool: body.tool,
    arguments: body.arguments,
    mode: async ? 'async' : 'sync',
    ...(body.agent_run_id === undefined ? {} : { agentRunId: body.agent_run_id }),
  });
  return submitResponse(await loadedAnswer(deps, result), req.requestId, async);
}

export { operationIdParam, submitResponse };

/**
 * `GET /v1/identity`: who the credentials are to the ledger: the tenant, the principal label (never
 * the credential) and the roles, so a client shows only the actions its caller may take (the
 * operators' console does). Every role may ask; nothing is read from the table.
 *
 * ```
 * 200 {"tenant":"local","principal":"token:c91cbbed","roles":["agent","operator"]}
 * ```
 */
async function whoAmI({ request, identity }: RouteContext): Promise<ApiResponse> {
  request.query([]);
  return respond(200, {
    tenant: identity.tenant,
    principal: identity.principal,
    roles: LEDGER_ROLES.filter((role) => identity.roles.has(role)),
  });
}

/** `GET /v1/operations/{id}[?include=arguments,history]`. */
async function read({ deps, req, request, identity, params }: RouteContext): Promise<ApiResponse> {
  const include = parseInclude(request.query(['include']).include);
  if (include.arguments && !identity.roles.has('approver') && !identity.roles.has('operator')) {
    throw new AccessError('forbidden', 'include=arguments needs the approver or operator role');
  }
  const operationId = operationIdParam(params.id);
  const record = await getOperation(deps, req, identity.tenant, operationId);
  return operationResponse(200, await loadResult(deps, record), {
    includeArguments: include.arguments,
    includeHistory: include.history,
  });
}

/** `POST /v1/operations/{id}/approval`. */
async function approve(ctx: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity, params } = ctx;
  request.query([]);
  const operationId = operationIdParam(params.id);
  const body = parseBody(ApprovalBody, request.jsonBody());
  try {
    const { record } = await decideApproval(deps, req, {
      tenant: identity.tenant,
      principal: identity.principal,
      ...(identity.uniqueId === undefined ? {} : { principalUniqueId: identity.uniqueId }),
      operationId,
      decision: body.decision,
      argumentsDigest: body.arguments_digest,
    });
    return operationResponse(200, await loadResult(deps, record));
  } catch (error) {
    if (error instanceof StateChangedError) return stateChanged(ctx, operationId, error);
    throw error;
  }
}

/** `POST /v1/operations/{id}/resolution`. */
async function resolve(ctx: RouteContext): Promise<ApiResponse> {
  const { deps, req, request, identity, params } = ctx;
  request.query([]);
  const operationId = operationIdParam(params.id);
  const body = parseBody(ResolutionBody, request.jsonBody());
  try {
    const { record } = await resolveOperation(deps, req, {
      tenant: identity.tenant,
      principal: identity.principal,
      operationId,
      outcome: body.outcome,
      ...('result' in body ? { result: body.result } : {}),
      attempt: body.attempt,
    });
    return operationResponse(200, await loadResult(deps, record));
  } catch (error) {
    if (error instanceof StateChangedError) return stateChanged(ctx, operationId, error);
    throw error;
  }
}

/**
 * `GET /v1/operations?state=&tool=&since=&until=&limit=&cursor=`: the tenant's operations, newest
 * first; by default its reconciliation queue (every unresolved state), or any state with
 * `state=all` or a list of states (engine/read-operations.ts).
 */
async function list({ deps, req, request, identity }: RouteContext): Promise<ApiResponse> {
  const query = request.query(['state', 'tool', 'since', 'until', 'limit', 'cursor']);
  const page = await listOperations(deps, req, identity.tenant, query);
  return respond(200, {
    operations: (await Promise.all(page.items.map((record) => loadResult(deps, record)))).map((record) =>
      toView(record),
    ),
    next_cursor: page.cursor ?? null,
  });
}

/**
 * `POST /v1/reconciliations`: one reconciler pass now over the caller's own tenant (not in the contract's §5;
 * it serves `tool-ledger reconcile`). It reads the tenant's unresolved index, not the sharded
 * attention index, so an operator acts on, calls the targets of, and counts, only its own tenant's
 * operations. Every decision is the scheduled pass's own conditional write (a pass racing the
 * schedule skips what the other already did), it never calls `execute`, and the answer holds counts
 * only. A record whose `reconcile` would not end in time is left for the scheduled pass and the pass
 * goes on with the others (`deferred`); the pass starts no decision it could not end well before API
 * Gateway's 29 s, and says so when it did not do everything (`complete: false`): what it did not do
 * stays due for the next scheduled pass, nothing carries on after the answer. The body, if any, must be
 * an empty JSON object.
 *
 * ```
 * 200 {"shards":[{"shard":"tenant","read":4,"acted":2}],"read":4,"pages":1,"actions":{"requeued":2},"skipped":0,"deferred":0,"complete":true}
 * ```
 */
async function reconcileNow({ deps, req, request, identity }: RouteContext): Promise<ApiResponse> {
  request.query([]);
  const body = request.event.body;
  if (body !== null && body !== undefined && body.length > 0)
    parseBody(ReconciliationBody, request.jsonBody());
  const shards: ShardProgress[] = [];
  const started = Date.now();
  const summary = await reconcilePass(deps, req, {
    tenant: identity.tenant,
    onShard: (progress) => shards.push({ ...progress }),
    // A record whose check does not fit what is left of the API's time is left for the scheduled
    // pass (untouched, so the schedule is not delayed), and the pass goes on with the rest.
    outOfTime: 'leave',
    holdBackMs: req.remainingMs ? passHoldBackMs(req.remainingMs()) : 0,
  });
  // Who asked, for the audit trail; counts only, as the scheduled pass logs them.
  logger.info('reconcile pass on request', {
    tenant: identity.tenant,
    principal: identity.principal,
    request_id: req.requestId,
    ...passLogFields(summary, started),
  });
  return respond(200, {
    shards,
    read: summary.read,
    pages: summary.pages,
    actions: summary.actions,
    skipped: summary.skipped,
    deferred: summary.deferred,
    complete: summary.complete,
  });
}

const described = new WeakMap<object, ToolDescription[]>();

/** `GET /v1/tools`: names, flags and JSON Schemas, computed once per registry. */
async function tools({ deps, request }: RouteContext): Promise<ApiResponse> {
  request.query([]);
  let list = described.get(deps.tools);
  if (!list) {
    list = describeTools(deps.tools);
    described.set(deps.tools, list);
  }
  return respond(200, { tools: list });
}

function parseInclude(raw: string | undefined): { arguments: boolean; history: boolean } {
  const out = { arguments: false, history: false };
  if (raw === undefined || raw === '') return out;
  for (const part of raw.split(',')) {
    const name = part.trim();
    if (name === 'arguments' || name === 'history') out[name] = true;
    else
      throw new ValidationError('include accepts "arguments" and "history"', [
        { path: 'query.include', message: 'invalid' },
      ]);
  }
  return out;
}
