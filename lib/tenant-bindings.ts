import { Token } from 'aws-cdk-lib';

/**
 * How the tenant map reaches the API handler. Lambda's environment is 4 KB in all (a map in a variable
 * holds about 40 ARNs), so every ARN known at synth time is bundled with the code as a JSON file the
 * handler reads at cold start; only ARNs that CloudFormation resolves at deploy time (roles of the
 * same app, `role.roleArn`) stay in the environment variable (`SETTINGS.iamTenants`). The handler merges the two.
 */

/** File name of the bundled part, next to the handler's `index.mjs`. */
export const TENANTS_FILE = 'tool-ledger-tenants.json';

/** Where Lambda extracts the code: the bundled file's path at runtime. */
export const TENANTS_FILE_PATH = `/var/task/${TENANTS_FILE}`;

/** A tenant's principals with every role present. */
export interface ResolvedTenant {
  agents: string[];
  approvers: string[];
  operators: string[];
}

/** The map split by when its ARNs are known. */
export interface SplitTenants {
  /** ARNs known at synth time: bundled. */
  bundled: Record<string, ResolvedTenant>;
  /** ARNs resolved at deploy time: the environment variable. */
  deployTime: Record<string, ResolvedTenant>;
}

/**
 * @example
 * ```ts
 * splitTenants({ acme: { agents: ['arn:aws:iam::1:role/a', role.roleArn], approvers: [], operators: [] } });
 * // { bundled: { acme: { agents: ['arn:aws:iam::1:role/a'], ... } }, deployTime: { acme: { agents: [role.roleArn], ... } } }
 * ```
 */
export function splitTenants(tenants: Readonly<Record<string, ResolvedTenant>>): SplitTenants {
  const split: SplitTenants = { bundled: {}, deployTime: {} };
  for (const [tenant, lists] of Object.entries(tenants)) {
    const part = (resolved: boolean): ResolvedTenant => ({
      agents: lists.agents.filter((arn) => Token.isUnresolved(arn) !== resolved),
      approvers: lists.approvers.filter((arn) => Token.isUnresolved(arn) !== resolved),
      operators: lists.operators.filter((arn) => Token.isUnresolved(arn) !== resolved),
    });
    split.bundled[tenant] = part(true);
    const deployTime = part(false);
    if (deployTime.agents.length + deployTime.approvers.length + deployTime.operators.length > 0) {
      split.deployTime[tenant] = deployTime;
    }
  }
  return split;
}
