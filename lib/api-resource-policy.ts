import { Effect, PolicyDocument, PolicyStatement, StarPrincipal } from 'aws-cdk-lib/aws-iam';
import { LEDGER_ROUTES, type LedgerRole, type LedgerRoute, routeArnPath } from '../functions/contract/routes';
import type { ResolvedTenant } from './tenant-bindings';

/**
 * The REST API's resource policy, built from the tenant map and the route table: on each route, only
 * the principals bound to a role that route allows may invoke. Without it, any principal of the
 * account whose identity policy allows `execute-api:*` reaches the handler, and a principal of another
 * account can never get in (cross-account calls need the API's own policy to allow them).
 *
 * ```
 *  Allow  *                                   on every route          (SigV4 is still required)
 *  Deny   aws:PrincipalArn not in {agents}    on POST /v1/operations
 *  Deny   aws:PrincipalArn not in {operators} on GET /v1/operations, /resolution, /reconciliations
 *  ...    one Deny per set of roles, so each principal is listed once per set it belongs to
 * ```
 *
 * The explicit Deny wins over any identity policy, so the Allow admits exactly the bound principals:
 * same-account principals then need no identity policy, and principals of other accounts need only
 * their own account's `execute-api:Invoke` (both sides must allow across accounts).
 */

/** API Gateway's default quota on the length of a REST API resource policy (raisable on request). */
export const RESOURCE_POLICY_MAX_LENGTH = 8_192;

/** `execute-api:/<stage>/<METHOD>/<path>`: the form a REST API's own policy names its routes in. */
export function routeResource(stage: string, route: LedgerRoute): string {
  return `execute-api:/${stage}/${route.method}${routeArnPath(route.path)}`;
}

const ROLE_LISTS: Readonly<Record<LedgerRole, keyof ResolvedTenant>> = {
  agent: 'agents',
  approver: 'approvers',
  operator: 'operators',
};

/** Every principal bound, in any tenant, to one of `roles`, in the order first seen. */
export function principalsFor(
  tenants: Readonly<Record<string, ResolvedTenant>>,
  roles: readonly LedgerRole[],
): string[] {
  const principals = new Set<string>();
  for (const tenant of Object.values(tenants)) {
    for (const role of roles) for (const arn of tenant[ROLE_LISTS[role]]) principals.add(arn);
  }
  return [...principals];
}

/**
 * The resource policy for a stage.
 *
 * @example
 * ```ts
 * new RestApi(this, 'Api', { policy: apiResourcePolicy(settings.tenants, 'prod') });
 * ```
 */
export function apiResourcePolicy(
  tenants: Readonly<Record<string, ResolvedTenant>>,
  stage: string,
  vpcEndpointIds: readonly string[] = [],
): PolicyDocument {
  const groups = new Map<string, { roles: readonly LedgerRole[]; routes: LedgerRoute[] }>();
  for (const route of LEDGER_ROUTES) {
    const key = [...route.roles].sort().join('+');
    const group = groups.get(key) ?? { roles: route.roles, routes: [] };
    group.routes.push(route);
    groups.set(key, group);
  }
  const document = new PolicyDocument();
  document.addStatements(
    new PolicyStatement({
      sid: 'InvokeRoutes',
      effect: Effect.ALLOW,
      principals: [new StarPrincipal()],
      actions: ['execute-api:Invoke'],
      resources: LEDGER_ROUTES.map((route) => routeResource(stage, route)),
    }),
  );
  for (const [key, group] of groups) {
    const principals = principalsFor(tenants, group.roles);
    document.addStatements(
      new PolicyStatement({
        sid: `OnlyBound${key
          .split('+')
          .map((role) => role.charAt(0).toUpperCase() + role.slice(1))
          .join('')}`,
        effect: Effect.DENY,
        principals: [new StarPrincipal()],
        actions: ['execute-api:Invoke'],
        resources: group.routes.map((route) => routeResource(stage, route)),
        // No principal bound to these roles: nobody may call these routes.
        conditions: principals.length > 0 ? { ArnNotEquals: { 'aws:PrincipalArn': principals } } : undefined,
      }),
    );
  }
  if (vpcEndpointIds.length > 0) {
    // A private API: only requests through the deployment's own VPC endpoints, whoever signs them.
    document.addStatements(
      new PolicyStatement({
        sid: 'OnlyThroughVpcEndpoints',
        effect: Effect.DENY,
        principals: [new StarPrincipal()],
        actions: ['execute-api:Invoke'],
        resources: LEDGER_ROUTES.map((route) => routeResource(stage, route)),
        conditions: { StringNotEquals: { 'aws:SourceVpce': [...vpcEndpointIds] } },
      }),
    );
  }
  return document;
}
