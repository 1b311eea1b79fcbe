import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { EVENT_STATES } from '../../functions/contract/completion-event';
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
});
