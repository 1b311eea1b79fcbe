import { Stack } from 'aws-cdk-lib';
import { AccountRootPrincipal, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { ToolLedger } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

/** Findings as `rule at path` lines, so a failure names what to fix. */
function findings(app: ReturnType<typeof testApp>): string[] {
  const report = new AwsSolutionsChecks().validateScope(app);
  return report.violations.flatMap((violation) =>
    violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath}`),
  );
}

describe('cdk-nag AwsSolutions', () => {
  it('reports nothing unacknowledged for the example deployment', () => {
    const app = testApp();
    exampleStack(app);
    expect(findings(app)).toEqual([]);
  });

  it('reports nothing unacknowledged with tracing, a WAF, no account logging role and grants to roles', () => {
    const app = testApp();
    const stack = new Stack(app, 'Everything');
    const ledger = new ToolLedger(stack, 'Ledger', {
      tracing: true,
      webAclArn: 'arn:aws:wafv2:eu-west-1:123456789012:regional/webacl/ledger/abc',
      apiCloudWatchRole: false,
      reservedConcurrency: { executor: 10 },
      executorMaxConcurrency: 5,
    });
    for (const grant of ['grantAgent', 'grantApprover', 'grantOperator', 'grantEnqueue'] as const) {
      ledger[grant](new Role(stack, `${grant}Role`, { assumedBy: new AccountRootPrincipal() }));
    }
    expect(findings(app)).toEqual([]);
  });

  it('still finds what is not acknowledged (the check is live)', () => {
    const app = testApp();
    const stack = new Stack(app, 'Bare');
    new Role(stack, 'Wide', { assumedBy: new AccountRootPrincipal() }).addToPolicy(
      new PolicyStatement({ actions: ['dynamodb:*'], resources: ['*'] }),
    );
    expect(findings(app).some((line) => line.startsWith('AwsSolutions-IAM5'))).toBe(true);
  });
});
