/**
 * The HTTP routes of the contract's §5 as data: which role may call which method, and the coarse body shape API
 * Gateway checks before a Lambda is paid for. Both sides read this one table: the construct (lib/) builds
 * the API's resources, models and per-role IAM policies from it; the handler (functions/http/) routes
 * by it and checks the same roles; local mode builds API Gateway's resource templates from it; the CLI
 * forms its paths with {@link operationPath}. A route cannot be reachable without a role that grants
 * it, and no path is written twice. Pure data: no SDK, no CDK.
 */

/** A caller's role within its tenant; each maps to one IAM policy and one `grant*` method. */
export type LedgerRole = 'agent' | 'approver' | 'operator';

/** Every role, in the order policies and outputs are created. */
export const LEDGER_ROLES: readonly LedgerRole[] = ['agent', 'approver', 'operator'];

/** A JSON Schema (draft 4, what API Gateway models accept), kept as plain data. */
export interface BodySchema {
  /** Fields that must be present. */
  required: readonly string[];
  /** Property types and enums; properties not listed are left to the handler. */
  properties: Readonly<
    Record<
      string,
      {
        type: 'string' | 'integer' | 'object' | 'boolean';
        enum?: readonly string[];
        minimum?: number;
        maximum?: number;
      }
    >
  >;
}

/** One method on one resource path. */
export interface LedgerRoute {
  /**
   * Stable handle of the route: the HTTP handler's table is keyed by it (functions/http/routes.ts), so
   * a route without a handler, or a handler without a route, does not compile.
   */
  id: string;
  /** HTTP method. */
  method: 'GET' | 'POST';
  /** Resource path with `{id}` for the operation ID, as API Gateway writes it. */
  path: string;
  /** Roles whose IAM policy allows `execute-api:Invoke` on this route. */
  roles: readonly LedgerRole[];
  /**
   * The body shape the contract's §5 mandates. Only what the handler would reject with 400 `validation_failed`
   * anyway is checked here, so the gateway never answers differently from the handler.
   */
  body?: BodySchema;
}

/** The outcomes a caller reports for its attempt (`POST /v1/operations/{id}/outcome`). */
const CALLER_OUTCOME_NAMES = ['succeeded', 'failed_terminal', 'failed_retryable', 'uncertain'] as const;

/**
 * The API: the contract's §5 and the routes of operations their caller executes (§14: the claim is
 * `POST /v1/operations` with `"execution": "caller"`; its heartbeat, outcome and any agent's verdict
 * have routes of their own, all `agent`), plus `POST /v1/reconciliations` (run one reconciler pass
 * now, for `tool-ledger reconcile`) and `GET /v1/identity` (who the caller is, for clients that show
 * only what it may do). Listing the tenant's operations and running a pass are operator-only.
 */
const ROUTE_TABLE = [
  {
    id: 'submit',
    method: 'POST',
    path: '/v1/operations',
    roles: ['agent'],
    body: {
      required: ['tool'],
      properties: {
        tool: { type: 'string' },
        agent_run_id: { type: 'string' },
        execution: { type: 'string', enum: ['ledger', 'caller'] },
        lease_seconds: { type: 'integer', minimum: 1, maximum: 900 },
        requires_approval: { type: 'boolean' },
        downstream_idempotent: { type: 'boolean' },
        max_attempts: { type: 'integer', minimum: 1, maximum: 10 },
        claim_id: { type: 'string' },
      },
    },
  },
  { id: 'list', method: 'GET', path: '/v1/operations', roles: ['operator'] },
  { id: 'read', method: 'GET', path: '/v1/operations/{id}', roles: ['agent', 'approver', 'operator'] },
  {
    id: 'approve',
    method: 'POST',
    path: '/v1/operations/{id}/approval',
    roles: ['approver'],
    body: {
      required: ['decision', 'arguments_digest'],
      properties: {
        decision: { type: 'string', enum: ['approve', 'reject'] },
        arguments_digest: { type: 'string' },
      },
    },
  },
  {
    id: 'resolve',
    method: 'POST',
    path: '/v1/operations/{id}/resolution',
    roles: ['operator'],
    body: {
      required: ['outcome'],
      properties: {
        outcome: { type: 'string', enum: ['applied', 'not_applied', 'failed'] },
        attempt: { type: 'integer', minimum: 0 },
      },
    },
  },
  {
    id: 'lease',
    method: 'POST',
    path: '/v1/operations/{id}/lease',
    roles: ['agent'],
    body: {
      required: ['token'],
      properties: { token: { type: 'string' }, lease_seconds: { type: 'integer', minimum: 1, maximum: 900 } },
    },
  },
  {
    id: 'outcome',
    method: 'POST',
    path: '/v1/operations/{id}/outcome',
    roles: ['agent'],
    body: {
      required: ['token', 'outcome'],
      properties: {
        token: { type: 'string' },
        outcome: { type: 'string', enum: CALLER_OUTCOME_NAMES },
        error: { type: 'object' },
      },
    },
  },
  {
    id: 'verdict',
    method: 'POST',
    path: '/v1/operations/{id}/reconciliation',
    roles: ['agent'],
    body: {
      required: ['attempt', 'verdict'],
      properties: {
        attempt: { type: 'integer', minimum: 1 },
        verdict: { type: 'string', enum: ['applied', 'not_applied'] },
        downstream_key: { type: 'string' },
      },
    },
  },
  // No body model: the handler takes no body (or `{}`), and a pass has no options to validate yet.
  { id: 'reconcile', method: 'POST', path: '/v1/reconciliations', roles: ['operator'] },
  { id: 'tools', method: 'GET', path: '/v1/tools', roles: ['agent', 'approver', 'operator'] },
  // Who the caller is to the ledger (tenant, principal, roles): clients show only what it may do.
  { id: 'identity', method: 'GET', path: '/v1/identity', roles: ['agent', 'approver', 'operator'] },
  // The MCP front door (JSON-RPC bodies, checked by the handler): any role lists tools, `agent` calls them.
  { id: 'mcp', method: 'POST', path: '/mcp', roles: ['agent', 'approver', 'operator'] },
] as const satisfies readonly LedgerRoute[];

/** The handle of each route of {@link LEDGER_ROUTES}. */
export type RouteId = (typeof ROUTE_TABLE)[number]['id'];

/** Every route, in the order the API declares its resources. */
export const LEDGER_ROUTES: readonly (LedgerRoute & { id: RouteId })[] = ROUTE_TABLE;

/**
 * The resource part of an `execute-api` ARN for a route: path parameters become `*`, which IAM matches
 * across `/` too. That is safe here because every route that ends in a fixed segment (`/approval`,
 * `/resolution`) keeps it after the wildcard, so `POST /v1/operations/*` is never granted on its own.
 *
 * @example
 * ```ts
 * routeArnPath('/v1/operations/{id}'); // '/v1/operations/*'
 * ```
 */
export function routeArnPath(path: string): string {
  return path.replace(/\{[^}]+\}/g, '*');
}

/** The routes one role may call. */
export function routesOf(role: LedgerRole): LedgerRoute[] {
  return LEDGER_ROUTES.filter((route) => route.roles.includes(role));
}

/** A route's stable name for logs and errors: its method and path template, never a concrete path. */
export function routeName(route: Pick<LedgerRoute, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/**
 * Every resource path of the API, each once, in table order: API Gateway's resources (and local mode's
 * stand-in for them), where `{id}` becomes `pathParameters.id`.
 */
export const API_RESOURCES: readonly string[] = [...new Set(LEDGER_ROUTES.map((route) => route.path))];

/** The stage the API is deployed to; local mode's events carry the same name. */
export const API_STAGE = 'prod';

/**
 * The path of one operation (`GET /v1/operations/{id}` and the `Location` header): the ID is
 * percent-encoded as one path segment, so IDs with `/`, `?`, `#` or `%` round-trip. `suffix` names a
 * sub-resource (`approval`, `resolution`, and a caller's `lease`, `outcome`, `reconciliation`).
 *
 * @example
 * ```ts
 * operationPath('run/42'); // '/v1/operations/run%2F42'
 * operationPath('run-42', 'approval'); // '/v1/operations/run-42/approval'
 * ```
 */
export function operationPath(
  operationId: string,
  suffix?: 'approval' | 'resolution' | 'lease' | 'outcome' | 'reconciliation',
): string {
  const path = `${OPERATIONS_PATH}/${encodeURIComponent(operationId)}`;
  return suffix === undefined ? path : `${path}/${suffix}`;
}

/** The collection of operations: submit (POST) and the operators' listing (GET). */
export const OPERATIONS_PATH = routeOf('submit').path;

/** Running a reconciler pass now (`tool-ledger reconcile`). */
export const RECONCILIATIONS_PATH = routeOf('reconcile').path;

/** The tools and their schemas. */
export const TOOLS_PATH = routeOf('tools').path;

/** Who the caller is: tenant, principal, roles. */
export const IDENTITY_PATH = routeOf('identity').path;

/** The route with this handle. */
export function routeOf(id: RouteId): LedgerRoute {
  return LEDGER_ROUTES.find((route) => route.id === id) as LedgerRoute;
}
