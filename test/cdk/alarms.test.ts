import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Context } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_METRICS } from '../../functions/contract/metrics';
import { newRequest } from '../../functions/engine/ledger-deps';
import { submitOperation } from '../../functions/engine/submit-operation';
import { invocationContext } from '../../functions/local/lambda-context';
import { createReconcilerHandler } from '../../functions/reconciler/reconciler-handler';
import { buildRuntime } from '../../functions/wiring';
import { ToolLedger } from '../../lib/tool-ledger';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { exampleStack, testApp } from './synth';

/**
 * Alarms that reach someone and mean what they say: the topic lets CloudWatch publish, the backlog
 * and incomplete-pass alarms do not go quiet when passes cannot finish, the near-timeout alarm does
 * not fire because a busy pass uses its share, a single handler error does not page, and DynamoDB
 * throttling of the table and of each index is watched.
 */

type Props = Record<string, unknown>;
let template: Template;
beforeAll(() => {
  template = Template.fromStack(exampleStack(testApp()));
});

const alarms = (t: Template): Props[] =>
  Object.entries(t.findResources('AWS::CloudWatch::Alarm')).map(([id, r]) => ({
    id,
    ...(r.Properties as Props),
  }));
const alarmOf = (t: Template, metricName: string) => {
  const found = alarms(t).filter((a) => a.MetricName === metricName);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe('the alarm topic', () => {
  it('lets CloudWatch alarms of this account publish to it, over TLS only', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: {
              ArnLike: {
                'aws:SourceArn': {
                  'Fn::Join': [
                    '',
                    Match.arrayWith([
                      Match.stringLikeRegexp(':cloudwatch:'),
                      Match.stringLikeRegexp(':alarm:\\*'),
                    ]),
                  ],
                },
              },
              StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
            },
          }),
        ]),
      },
    });
  });

  it('adds the same allow to a topic of the app passed in', () => {
    const stack = new Stack(testApp(), 'Own');
    const topic = new Topic(stack, 'Pager');
    new ToolLedger(stack, 'Ledger', { alarmTopic: topic });
    Template.fromStack(stack).hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: Match.stringLikeRegexp('Pager') }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish' }),
        ]),
      },
    });
  });
});

describe('alarms that do not go blind', () => {
  it('the backlog alarm treats a missing pass report as breaching', () => {
    expect(alarmOf(template, LEDGER_METRICS.unresolvedOperations)).toMatchObject({
      Statistic: 'Maximum',
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
  });

  it('an alarm fires when no pass reaches every due record for 15 minutes, or no pass reports at all', () => {
    expect(alarmOf(template, LEDGER_METRICS.incompletePasses)).toMatchObject({
      Namespace: 'ToolLedger',
      Statistic: 'Minimum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Period: 300,
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
  });
});

describe('handler errors', () => {
  it('page on errors in two of three 5-minute periods, not on a single one', () => {
    const errors = alarms(template).filter((a) => a.MetricName === 'Errors');
    expect(errors).toHaveLength(3);
    for (const alarm of errors) {
      expect(alarm).toMatchObject({ Threshold: 1, EvaluationPeriods: 3, DatapointsToAlarm: 2, Period: 300 });
    }
  });
});

describe('DynamoDB throttling', () => {
  it('alarms on read and write throttle events of the table and of each index', () => {
    const throttles = alarms(template).filter((a) =>
      JSON.stringify(a.Metrics ?? []).includes('ThrottleEvents'),
    );
    const watched = throttles.map((a) => {
      const metrics = a.Metrics as {
        MetricStat?: { Metric: { MetricName: string; Dimensions: { Name: string; Value: unknown }[] } };
      }[];
      const stats = metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
      expect(stats.map((m) => m.MetricName).sort()).toEqual(['ReadThrottleEvents', 'WriteThrottleEvents']);
      const index = stats[0]!.Dimensions.find((d) => d.Name === 'GlobalSecondaryIndexName');
      return (index?.Value as string | undefined) ?? 'table';
    });
    expect(watched.sort()).toEqual(['attention', 'operations', 'table', 'unresolved']);
    for (const alarm of throttles) {
      expect(alarm).toMatchObject({
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        TreatMissingData: 'notBreaching',
      });
    }
  });
});

const db = useDynalite();

describe('the reconciler near-timeout alarm', () => {
  it('stays below its threshold under a backlog: a busy pass ends within its share of the invocation', async () => {
    const reconciler = Object.values(template.findResources('AWS::Lambda::Function')).find((fn) =>
      String((fn.Properties as Props).Description).includes('reconciler'),
    )!.Properties as Props;
    const timeoutMs = (reconciler.Timeout as number) * 1000;
    const reconcilerId = Object.entries(template.findResources('AWS::Lambda::Function')).find(
      ([, fn]) => (fn.Properties as Props) === reconciler,
    )![0];
    const near = alarms(template).find(
      (a) => a.MetricName === 'Duration' && JSON.stringify(a.Dimensions).includes(reconcilerId),
    )!;

    // A backlog of due checks, each running to its 11 s deadline (the worst case a pass plans for):
    // more than one pass can do.
    let remaining = timeoutMs;
    const tool = new ScriptedTool('test.slowish', {
      timeoutMs: 11_000,
      reconcile: async () => {
        remaining -= 11_000;
        await new Promise((resolve) => setImmediate(resolve));
        return { status: 'applied', result: null };
      },
    });
    const runtime = buildRuntime(() => [tool.tool], {
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
      TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
    });
    runtime.deps.log = () => undefined;
    for (let i = 0; i < 30; i++) {
      tool.next({ kind: 'uncertain', code: 'timeout' });
      await submitOperation(runtime.deps, newRequest(runtime.deps), {
        tenant: 'acme',
        principal: 'agent',
        operationId: `backlog-${i}`,
        tool: tool.tool.name,
        arguments: { target: String(i) },
        mode: 'sync',
      });
    }
    const context: Context = {
      ...invocationContext({ name: 'reconciler', timeoutMs }),
      getRemainingTimeInMillis: () => remaining,
    };
    const summary = await createReconcilerHandler(() => runtime)({}, context);

    expect(summary.deferred).toBeGreaterThan(0); // it was busy: there was more than a pass could do
    const used = timeoutMs - remaining;
    expect(used).toBeLessThan(near.Threshold as number);
  });
});
