/**
 * The HTTP routes of SPEC §5 as data: which role may call which method, and the coarse body shape API
 * Gateway checks before a Lambda is paid for. The API, the per-role IAM policies and the tests all read
 * this one table, so a route cannot be reachable without a role that grants it.
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
    Record<string, { type: 'string' | 'integer' | 'object'; enum?: readonly string[]; minimum?: number }>
  >;
}

/** One method on one resource path. */
export interface LedgerRoute {
  /** HTTP method. */
  method: 'GET' | 'POST';
  /** Resource path with `{id}` for the operation ID, as API Gateway writes it. */
  path: string;
  /** Roles whose IAM policy allows `execute-api:Invoke` on this route. */
  roles: readonly LedgerRole[];
  /**
   * The body shape SPEC §5 mandates. Only what the handler would reject with 400 `validation_failed`
   * anyway is checked here, so the gateway never answers differently from the handler.
   */
  body?: BodySchema;
}

/**
 * The API: SPEC §5, plus `POST /v1/reconciliations` (run one reconciler pass now, for
 * `tool-ledger reconcile`). Listing the tenant's unresolved operations and running a pass are
 * operator-only.
 */
export const LEDGER_ROUTES: readonly LedgerRoute[] = [
  {
    method: 'POST',
    path: '/v1/operations',
    roles: ['agent'],
    body: { required: ['tool'], properties: { tool: { type: 'string' }, agent_run_id: { type: 'string' } } },
  },
  { method: 'GET', path: '/v1/operations', roles: ['operator'] },
  { method: 'GET', path: '/v1/operations/{id}', roles: ['agent', 'approver', 'operator'] },
  {
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
  // No body model: the handler takes no body (or `{}`), and a pass has no options to validate yet.
  { method: 'POST', path: '/v1/reconciliations', roles: ['operator'] },
  { method: 'GET', path: '/v1/tools', roles: ['agent', 'approver', 'operator'] },
  // The MCP front door (JSON-RPC bodies, checked by the handler): any role lists tools, `agent` calls them.
  { method: 'POST', path: '/mcp', roles: ['agent', 'approver', 'operator'] },
];

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
