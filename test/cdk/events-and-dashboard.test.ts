import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { EVENT_STATES } from '../../functions/contract/completion-event';
import { MAX_DASHBOARD_TENANTS } from '../../lib/monitoring';
import { ToolLedger } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles?: unknown[] } };

function eventsFunctionId(template: Template): string {
  const fns = template.findResources('AWS::Lambda::Function', {
    Properties: { Description: Match.stringLikeRegexp('completion events') },
  });
  const ids = Object.keys(fns);
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

/** The actions the events function's role is allowed, statement by statement. */
function eventsStatements(template: Template): Statement[] {
  const fn = template.findResources('AWS::Lambda::Function')[eventsFunctionId(template)] as {
    Properties: { Role: { 'Fn::GetAtt': [string, string] } };
  };
  const roleId = fn.Properties.Role['Fn::GetAtt'][0];
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Policy[];
  return policies
    .filter((p) => JSON.stringify(p.Properties.Roles ?? []).includes(roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement);
}

describe('completion events in the construct', () => {
  it('streams the table with old and new images into the events function, filtered to waited-for states, with batch item failures', () => {
    const template = Template.fromStack(exampleStack(testApp()));
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
    const mapping = template.findResources('AWS::Lambda::EventSourceMapping', {
      Properties: { FunctionName: { Ref: eventsFunctionId(template) } },
    });
    const props = (Object.values(mapping)[0] as { Properties: Record<string, unknown> }).Properties;
    expect(props.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    expect(props.StartingPosition).toBe('TRIM_HORIZON');
    const pattern = JSON.parse(
      (props.FilterCriteria as { Filters: { Pattern: string }[] }).Filters[0]!.Pattern,
    ) as { dynamodb: { NewImage: { state: { S: string[] } } } };
    expect(pattern.dynamodb.NewImage.state.S.sort()).toEqual([...EVENT_STATES].sort());
  });

  it('creates a bus and lets only the events function put events on it, naming it in its environment', () => {
    const template = Template.fromStack(exampleStack(testApp()));
    const buses = Object.keys(template.findResources('AWS::Events::EventBus'));
    expect(buses).toHaveLength(1);
    const fn = template.findResources('AWS::Lambda::Function')[eventsFunctionId(template)] as {
      Properties: { Environment: { Variables: Record<string, unknown> } };
    };
    expect(fn.Properties.Environment.Variables.TOOL_LEDGER_EVENT_BUS).toEqual({ Ref: buses[0] });
    const put = eventsStatements(template).filter((s) => [s.Action].flat().includes('events:PutEvents'));
    expect(put).toHaveLength(1);
    expect(put[0]?.Resource).toEqual({ 'Fn::GetAtt': [buses[0], 'Arn'] });
    // No other function may put events.
    const allPolicies = Object.values(template.findResources('AWS::IAM::Policy')) as Policy[];
    const putters = allPolicies.filter((p) =>
      p.Properties.PolicyDocument.Statement.some((s) => [s.Action].flat().includes('events:PutEvents')),
    );
    expect(putters).toHaveLength(1);
  });

  it('uses the deployment’s own bus when given one, and creates none', () => {
    const app = testApp();
    const stack = new Stack(app, 'OwnBus');
    const bus = new EventBus(stack, 'Bus', { eventBusName: 'platform' });
    new ToolLedger(stack, 'Ledger', { eventBus: bus });
    const template = Template.fromStack(stack);
    const buses = Object.keys(template.findResources('AWS::Events::EventBus'));
    expect(buses).toHaveLength(1); // the user's
    const put = eventsStatements(template).filter((s) => [s.Action].flat().includes('events:PutEvents'));
    expect(put[0]?.Resource).toEqual({ 'Fn::GetAtt': [buses[0], 'Arn'] });
  });
});

describe('the operations dashboard', () => {
  it('shows first executions, replays, conflicts, uncertain, the backlog by state, reconciler passes, throttles and events', () => {
    const template = Template.fromStack(exampleStack(testApp()));
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const needle of [
      'FirstExecutions',
      'Replays',
      'Conflicts',
      'UncertainOutcomes',
      'OpenUnresolved',
      'OpenNeedsReconciliation',
      'IncompleteReconcilePasses',
      'Reconciler passes: incomplete (1) and pass duration (ms)',
      'ReconciliationLatency',
      'ReadThrottleEvents',
      'WriteThrottleEvents',
      'DynamoDB throttle events',
      'IteratorAge',
    ]) {
      expect(body, needle).toContain(needle);
    }
  });

  it('adds per-tenant views of the bound tenants from the transition lines, giving no metric a tenant dimension', () => {
    const template = Template.fromStack(exampleStack(testApp()));
    const body = dashboardBody(template);
    for (const title of [
      'Per tenant: first executions',
      'Per tenant: uncertain, waiting for a person (transitions into)',
      'Per tenant: unresolved backlog by state (last transition in the time range)',
    ])
      expect(body, title).toContain(title);
    expect(body).toContain('tenant in ["acme", "globex"]');
    expect(body).toContain('stats count(*) as first_executions by tenant');
    // Over the handlers' own log groups, where the transition lines go.
    const groups = Object.keys(template.findResources('AWS::Logs::LogGroup')).filter((id) =>
      /(Api|Executor|Reconciler)HandlerLogs/.test(id),
    );
    expect(groups).toHaveLength(3);
    for (const id of groups) expect(body).toContain(id);
    expect(body).not.toMatch(/"tenant"\s*,\s*"acme"/); // no metric series per tenant
  });

  it('names at most 20 tenants, says how many more there are, and has no per-tenant view without tenants', () => {
    const tenants = Object.fromEntries(
      Array.from({ length: MAX_DASHBOARD_TENANTS + 5 }, (_, i) => [
        `t${String(i).padStart(2, '0')}`,
        { agents: [`arn:aws:iam::123456789012:role/agent-${i}`] },
      ]),
    );
    const stack = new Stack(testApp(), 'ManyTenants');
    new ToolLedger(stack, 'Ledger', { tenants });
    const body = dashboardBody(Template.fromStack(stack));
    expect(MAX_DASHBOARD_TENANTS).toBe(20);
    expect(body).toContain('"t19"]');
    expect(body).not.toContain('"t20"');
    expect(body).toContain('(first 20 tenants by name; 5 more in the logs)');
    expect(body.split('Per tenant:').length - 1).toBe(3);

    const bare = new Stack(testApp(), 'NoTenants');
    new ToolLedger(bare, 'Ledger');
    expect(dashboardBody(Template.fromStack(bare))).not.toContain('Per tenant:');
  });
});

function dashboardBody(template: Template): string {
  const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
    Properties: { DashboardBody: unknown };
  };
  // The widgets' JSON inside the template's JSON: quotes read back as plain quotes.
  return JSON.stringify(dashboard.Properties.DashboardBody).replace(/\\+"/g, '"').replace(/\\+n/g, '\n');
}
