import type { APIGatewayProxyEvent } from 'aws-lambda';
import { SETTINGS } from '../contract/environment';
import { TENANT_PATTERN } from '../contract/table';
import { AccessError } from '../domain/errors';
import { canonicalArn } from '../domain/principal';
import type { Authenticator, Identity, Role } from './identity';

/** `TOOL_LEDGER_IAM_TENANTS`: per tenant, the IAM principals of each role. */
export type IamTenants = Record<string, { agents?: string[]; approvers?: string[]; operators?: string[] }>;

const LISTS: readonly [keyof IamTenants[string], Role][] = [
  ['agents', 'agent'],
  ['approvers', 'approver'],
  ['operators', 'operator'],
];

const IAM_ARN = /^arn:aws[a-z-]*:(iam|sts)::\d{12}:\S+$/;

/**
 * Identity from API Gateway's IAM authorization (SigV4, checked by API Gateway before the Lambda
 * runs): `requestContext.identity.userArn` is looked up in `TOOL_LEDGER_IAM_TENANTS`, a JSON object
 * `{"<tenant>": {"agents": [arn...], "approvers": [...], "operators": [...]}}`. An assumed-role
 * session (`arn:aws:sts::ACCT:assumed-role/ROLE/SESSION`) matches its role
 * (`arn:aws:iam::ACCT:role/ROLE`, any role path). The principal is the caller's ARN as API Gateway
 * reports it, session included, so records and logs say which session acted. For the self-approval
 * rule a session counts as its role (`samePrincipalForApproval`): the caller picks the session name.
 *
 * Trust note: `userArn` is only an identity when the API method uses `AWS_IAM` authorization.
 *
 * @example
 * ```ts
 * const auth = new IamAuthenticator('{"acme":{"agents":["arn:aws:iam::123456789012:role/agent"]}}');
 * ```
 */
export class IamAuthenticator implements Authenticator {
  readonly challenge = 'AWS4-HMAC-SHA256';
  private readonly byArn = new Map<string, { tenant: string; roles: Set<Role> }>();

  /** @param json the value of `TOOL_LEDGER_IAM_TENANTS`. A principal may belong to one tenant only. */
  constructor(json: string) {
    let config: unknown;
    try {
      config = JSON.parse(json);
    } catch {
      throw new Error(`${SETTINGS.iamTenants.name} is not JSON`);
    }
    if (!config || typeof config !== 'object' || Array.isArray(config)) {
      throw new Error(`${SETTINGS.iamTenants.name} must be an object of tenants`);
    }
    for (const [tenant, lists] of Object.entries(config as IamTenants)) {
      if (!TENANT_PATTERN.test(tenant))
        throw new Error(`${SETTINGS.iamTenants.name} names an invalid tenant`);
      if (!lists || typeof lists !== 'object') throw new Error(`tenant ${tenant} must be an object`);
      for (const [list, role] of LISTS) {
        const arns = lists[list] ?? [];
        if (!Array.isArray(arns)) throw new Error(`tenant ${tenant}: ${list} must be an array of ARNs`);
        for (const arn of arns) {
          if (typeof arn !== 'string' || !IAM_ARN.test(arn)) {
            throw new Error(`tenant ${tenant}: ${list} holds a value that is not an IAM ARN`);
          }
          const key = canonicalArn(arn);
          const entry = this.byArn.get(key) ?? { tenant, roles: new Set<Role>() };
          if (entry.tenant !== tenant) throw new Error(`${arn} belongs to more than one tenant`);
          entry.roles.add(role);
          this.byArn.set(key, entry);
        }
      }
    }
  }

  authenticate(event: APIGatewayProxyEvent): Identity {
    const arn = event.requestContext?.identity?.userArn;
    if (typeof arn !== 'string' || arn === '') {
      throw new AccessError('unauthenticated', 'the request is not signed with IAM credentials');
    }
    const entry = this.byArn.get(canonicalArn(arn));
    if (!entry) throw new AccessError('forbidden', 'this IAM principal is not a member of any tenant');
    const uniqueId = event.requestContext.identity.caller;
    return {
      tenant: entry.tenant,
      principal: arn,
      ...(typeof uniqueId === 'string' && uniqueId !== '' ? { uniqueId } : {}),
      roles: entry.roles,
    };
  }
}

/** The form configured and calling ARNs are compared in (it lives with the other principal rules). */
export { canonicalArn };
