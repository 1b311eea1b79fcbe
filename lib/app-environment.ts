import type { Environment } from 'aws-cdk-lib';

/**
 * Where the CDK app deploys. Never taken silently from `CDK_DEFAULT_ACCOUNT` / `CDK_DEFAULT_REGION`:
 * those are whatever the synthesizing machine's credentials say (offline, `us-east-1`), and a region
 * baked into the template ends up in `kms:ViaService` conditions and execute-api ARNs, so a template
 * synthesized on a laptop would deploy to another region with wrong permissions. Either both account
 * and region are given on purpose, or the stack is environment-agnostic (the region and account
 * become `AWS::Region` / `AWS::AccountId`, resolved by CloudFormation where it is deployed).
 */

const ACCOUNT = /^\d{12}$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

/**
 * The stack's `env` from the app's context values `toolLedger:account` and `toolLedger:region`.
 *
 * @example
 * ```ts
 * deploymentEnvironment(undefined, undefined); // undefined: environment-agnostic
 * deploymentEnvironment('111122223333', 'eu-west-1'); // { account: '111122223333', region: 'eu-west-1' }
 * ```
 */
export function deploymentEnvironment(
  account: string | undefined,
  region: string | undefined,
): Environment | undefined {
  if (account === undefined && region === undefined) return undefined;
  const problems: string[] = [];
  if (account === undefined || region === undefined) {
    problems.push(
      'set both toolLedger:account and toolLedger:region (a stack bound to a region must also name its ' +
        'account), or neither for an environment-agnostic template',
    );
  }
  if (account !== undefined && !ACCOUNT.test(account))
    problems.push(`toolLedger:account "${account}" is not 12 digits`);
  if (region !== undefined && !REGION.test(region))
    problems.push(`toolLedger:region "${region}" is not a region name`);
  if (problems.length > 0) throw new Error(`Deployment environment: ${problems.join('; ')}.`);
  return { account, region };
}
