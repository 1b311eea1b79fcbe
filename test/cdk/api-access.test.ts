import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { LEDGER_ROUTES, type LedgerRoute } from '../../functions/contract/routes';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger, type ToolLedgerProps } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

type Statement = {
  Effect: 'Allow' | 'Deny';
  Principal: unknown;
  Action: string;
  Resource: string | string[];
  Condition?: { ArnNotEquals?: { 'aws:PrincipalArn': string | string[] } };
};

const ACCT = '123456789012';
const role = (name: string, account = ACCT) => `arn:aws:iam::${account}:role/${name}`;
const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

function resourcePolicy(template: Template): Statement[] {
  const apis = Object.values(template.findResources('AWS::ApiGateway::RestApi'));
  expect(apis).toHaveLength(1);
  return (apis[0]!.Properties.Policy as { Statement: Statement[] }).Statement;
}

/** `execute-api:/prod/POST/v1/operations` matches `execute-api:/prod/POST/v1/operations/*`? IAM globbing. */
function matches(pattern: string, resource: string): boolean {
  const regex = new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`);
  return regex.test(resource);
}
const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/**
 * What API Gateway decides for a SigV4 caller with no identity policy of its own (another account's
 * principal, or one of this account with only the resource policy): allowed only by an Allow and no Deny.
 */
function mayInvoke(statements: Statement[], principalArn: string, route: LedgerRoute): boolean {
  const resource = `execute-api:/prod/${route.method}${route.path.replace('{id}', 'op-1')}`;
  const applies = (s: Statement) => asArray(s.Resource).some((pattern) => matches(pattern, resource));
  const denied = statements.some((s) => {
    if (s.Effect !== 'Deny' || !applies(s)) return false;
    const unless = s.Condition?.ArnNotEquals?.['aws:PrincipalArn'];
    return unless === undefined || !asArray(unless).includes(principalArn);
  });
  return !denied && statements.some((s) => s.Effect === 'Allow' && applies(s));
}

/** Synth warnings of a stack, as text. */
function warningsOf(stack: Stack): string[] {
  return stack.node
    .findAll()
    .flatMap((construct) => construct.node.metadata)
    .filter((entry) => entry.type === 'aws:cdk:warning')
    .map((entry) => String(entry.data));
}

const routesFor = (statements: Statement[], principal: string) =>
  LEDGER_ROUTES.filter((route) => mayInvoke(statements, principal, route)).map(
    (route) => `${route.method} ${route.path}`,
  );

describe('API resource policy', () => {
  it('lets each bound principal invoke exactly the routes of its roles, and nobody else anything', () => {
    const statements = resourcePolicy(Template.fromStack(exampleStack(testApp())));
    expect(routesFor(statements, role('acme-agent'))).toEqual([
      'POST /v1/operations',
      'GET /v1/operations/{id}',
      'POST /v1/operations/{id}/lease',
      'POST /v1/operations/{id}/outcome',
      'POST /v1/operations/{id}/reconciliation',
      'GET /v1/tools',
      'GET /v1/identity',
      'POST /mcp',
    ]);
    expect(routesFor(statements, role('acme-approver'))).toEqual([
      'GET /v1/operations/{id}',
      'POST /v1/operations/{id}/approval',
      'GET /v1/tools',
      'GET /v1/identity',
      'POST /mcp',
    ]);
    expect(routesFor(statements, role('acme-ops'))).toEqual([
      'GET /v1/operations',
      'GET /v1/operations/{id}',
      'POST /v1/operations/{id}/resolution',
      'POST /v1/reconciliations',
      'GET /v1/tools',
      'GET /v1/identity',
      'POST /mcp',
    ]);
    // An admin of the account with execute-api:* is still refused: the Deny wins over identity policies.
    expect(routesFor(statements, role('Admin'))).toEqual([]);
    expect(routesFor(statements, `arn:aws:iam::${ACCT}:user/alice`)).toEqual([]);
  });

  it('admits a principal of another account bound in tenants (it needs only its own identity policy)', () => {
    const partner = role('partner-agent', '999988887777');
    const statements = resourcePolicy(
      Template.fromStack(
        exampleStack(testApp(), {
          ledger: { tenants: { partner: { agents: [partner] } } },
        }),
      ),
    );
    expect(routesFor(statements, partner)).toEqual([
      'POST /v1/operations',
      'GET /v1/operations/{id}',
      'POST /v1/operations/{id}/lease',
      'POST /v1/operations/{id}/outcome',
      'POST /v1/operations/{id}/reconciliation',
      'GET /v1/tools',
      'GET /v1/identity',
      'POST /mcp',
    ]);
  });

  it('with no tenant, denies every route to everyone', () => {
    const stack = new Stack(testApp(), 'Empty');
    new ToolLedger(stack, 'Ledger');
    const statements = resourcePolicy(Template.fromStack(stack));
    for (const route of LEDGER_ROUTES) expect(mayInvoke(statements, role('anyone'), route)).toBe(false);
  });

  it('redeploys the stage when the tenants change (a REST API policy applies only to a new deployment)', () => {
    const deploymentId = (props: ToolLedgerProps) => {
      const template = Template.fromStack(exampleStack(testApp(), { ledger: props }));
      return Object.keys(template.findResources('AWS::ApiGateway::Deployment'));
    };
    const before = deploymentId({});
    const after = deploymentId({ tenants: { initech: { agents: [role('initech-agent')] } } });
    expect(before).toHaveLength(1);
    expect(after).not.toEqual(before);
  });

  it('refuses grantAgent on a role of another account, saying what to do instead', () => {
    const stack = new Stack(testApp(), 'Cross', { env: { account: ACCT, region: 'eu-west-1' } });
    const ledger = new ToolLedger(stack, 'Ledger');
    const partner = Role.fromRoleArn(stack, 'Partner', role('partner-agent', '999988887777'));
    expect(() => ledger.grantAgent(partner)).toThrow(ToolLedgerConfigError);
    expect(() => ledger.grantAgent(partner)).toThrow(
      /Bind its ARN in tenants.*identity policy in its own account/s,
    );
    // A role of this app still gets its identity policy, with a warning while it is not bound.
    const own = new Role(stack, 'Own', { assumedBy: new AccountRootPrincipal() });
    expect(ledger.grantAgent(own).success).toBe(true);
    expect(warningsOf(stack).some((text) => text.includes('is not bound as an agent'))).toBe(true);
  });

  it('warns nowhere when the granted role is bound (same token, same role)', () => {
    const stack = new Stack(testApp(), 'Bound', { env: { account: ACCT, region: 'eu-west-1' } });
    const own = new Role(stack, 'Own', { assumedBy: new AccountRootPrincipal() });
    const ledger = new ToolLedger(stack, 'Ledger', { tenants: { acme: { agents: [own.roleArn] } } });
    ledger.grantAgent(own);
    expect(warningsOf(stack).filter((text) => text.includes('not bound'))).toEqual([]);
  });

  it('warns at synth when the policy outgrows API Gateway’s default 8192-character quota', () => {
    const agents = Array.from({ length: 80 }, (_, n) => role(`team-${n}-agent-with-a-long-role-name`));
    const stack = new Stack(testApp(), 'Big');
    new ToolLedger(stack, 'Ledger', { tenants: { big: { agents } } });
    expect(warningsOf(stack).some((text) => /resource policy is about \d+ characters, over/.test(text))).toBe(
      true,
    );
  });
});

describe('principal bindings', () => {
  const problemsOf = (props: ToolLedgerProps): string[] => {
    try {
      resolveSettings(props);
      return [];
    } catch (error) {
      if (error instanceof ToolLedgerConfigError) return [...error.problems];
      throw error;
    }
  };

  it('refuses an assumed-role session and names the role to bind instead', () => {
    expect(
      problemsOf({
        tenants: { acme: { agents: [`arn:aws:sts::${ACCT}:assumed-role/agent-role/run-42`] } },
      }),
    ).toEqual([expect.stringContaining(`bind the role "arn:aws:iam::${ACCT}:role/agent-role"`)]);
  });

  it('refuses two tenants bound to one role written two ways (with and without its path)', () => {
    const problems = problemsOf({
      tenants: {
        acme: { agents: [role('teams/shared')] },
        globex: { operators: [role('shared')] },
      },
    });
    expect(problems).toEqual([
      `"${role('teams/shared')}" and "${role('shared')}" (one role) is bound to tenants "acme" and "globex": ` +
        'the API derives the tenant from the principal, so a principal belongs to exactly one tenant; use one role per tenant.',
    ]);
  });

  it('refuses sessions of one role bound to two tenants (today every call would be a 500)', () => {
    const problems = problemsOf({
      tenants: {
        acme: { agents: [`arn:aws:sts::${ACCT}:assumed-role/shared/a`] },
        globex: { agents: [`arn:aws:sts::${ACCT}:assumed-role/shared/b`] },
      },
    });
    expect(problems).toHaveLength(2);
    for (const problem of problems) expect(problem).toContain('assumed-role session');
  });
});
