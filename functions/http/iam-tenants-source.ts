import { readFileSync } from 'node:fs';
import { readSetting, SETTINGS } from '../contract/environment';
import type { IamTenants } from './auth-iam';

/**
 * Where the IAM tenant map comes from on AWS: the JSON file bundled with the code
 * (`TOOL_LEDGER_IAM_TENANTS_FILE`, every ARN known at synth time, because Lambda's 4 KB environment
 * holds only about 40) plus `TOOL_LEDGER_IAM_TENANTS` (ARNs CloudFormation resolves at deploy time).
 * The two are merged list by list; {@link IamAuthenticator} then validates the result as one map, so a
 * principal in both parts under two tenants is refused exactly as within one.
 *
 * @example
 * ```ts
 * new IamAuthenticator(iamTenantsJson(process.env));
 * ```
 */
export function iamTenantsJson(env: NodeJS.ProcessEnv): string {
  const inline = readSetting(env, SETTINGS.iamTenants);
  const file = readSetting(env, SETTINGS.iamTenantsFile);
  if (!file) return inline;
  let bundled: string;
  try {
    bundled = readFileSync(file, 'utf8');
  } catch {
    // The path is configuration, not a secret; the content is never logged.
    throw new Error(`${SETTINGS.iamTenantsFile.name} cannot be read: ${file}`);
  }
  const merged: IamTenants = {};
  for (const [source, json] of [
    [SETTINGS.iamTenantsFile.name, bundled],
    [SETTINGS.iamTenants.name, inline],
  ] as const) {
    let part: unknown;
    try {
      part = JSON.parse(json);
    } catch {
      throw new Error(`${source} is not JSON`);
    }
    if (!part || typeof part !== 'object' || Array.isArray(part)) {
      throw new Error(`${source} must be an object of tenants`);
    }
    for (const [tenant, lists] of Object.entries(part as IamTenants)) {
      const into = merged[tenant] ?? {};
      merged[tenant] = into;
      for (const list of ['agents', 'approvers', 'operators'] as const) {
        const arns = lists?.[list];
        if (arns === undefined) continue;
        // A non-array is kept as is, so the authenticator reports it.
        into[list] = Array.isArray(arns) && Array.isArray(into[list]) ? [...into[list]!, ...arns] : arns;
      }
    }
  }
  return JSON.stringify(merged);
}
