import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Table } from 'aws-cdk-lib/aws-dynamodb';
import { SecurityGroup, Subnet, Vpc } from 'aws-cdk-lib/aws-ec2';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_METRICS } from '../../functions/contract/metrics';
import { deploymentEnvironment } from '../../lib/app-environment';
import { apiBundledFiles, apiEnvironment } from '../../lib/environment';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger, type ToolLedgerProps } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
};

let template: Template;
beforeAll(() => {
  template = Template.fromStack(exampleStack(testApp()));
});

const ofType = (t: Template, type: string) => t.findResources(type) as Record<string, Resource>;
const alarms = (t: Template) => Object.values(ofType(t, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties);
const lambdaTimeout = (t: Template, kind: string) =>
  Object.values(ofType(t, 'AWS::Lambda::Function')).find((fn) =>
    String(fn.Properties.Description).includes(kind),
  )!.Properties.Timeout as number;

function ledgerStack(props: ToolLedgerProps = {}, id = 'Custom'): { stack: Stack; ledger: ToolLedger } {
  const stack = new Stack(testApp(), id);
  return { stack, ledger: new ToolLedger(stack, 'Ledger', props) };
}

describe('alarms that tell someone', () => {
  it('notify a topic the construct creates by default, encrypted with a key only this account’s alarms may use', () => {
    const { stack, ledger } = ledgerStack();
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::SNS::Topic', 1);
    const topicId = Object.keys(ofType(t, 'AWS::SNS::Topic'))[0]!;
    for (const alarm of alarms(t)) {
      expect(alarm.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.OKActions).toEqual([{ Ref: topicId }]);
    }
    expect(stack.resolve(ledger.alarmTopic.topicArn)).toEqual({ Ref: topicId });
    t.hasResourceProperties('AWS::KMS::Key', {
      Description: 'tool-ledger: encrypts alarm notifications',
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          }),
        ]),
      },
    });
  });

  it('notify a topic passed in instead, and create none', () => {
    const stack = new Stack(testApp(), 'Own');
    const topic = new Topic(stack, 'Pager');
    new ToolLedger(stack, 'Ledger', { alarmTopic: topic });
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::SNS::Topic', 1);
    for (const alarm of alarms(t)) expect(JSON.stringify(alarm.AlarmActions)).toContain('Pager');
  });

  it('alarm on the current stock of needs_reconciliation (a gauge that stays up while one is stuck)', () => {
    const gauge = alarms(template).find((a) => a.MetricName === LEDGER_METRICS.openNeedsReconciliation);
    expect(gauge).toMatchObject({
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'ignore',
    });
    // The 5-minute sum of transitions, which returns to OK while the operation is still stuck, is gone.
    expect(alarms(template).some((a) => a.MetricName === LEDGER_METRICS.needsReconciliation)).toBe(false);
  });

  it('alarm on API 5xx rate and p99 latency, read by this API’s name', () => {
    const byMetric = (name: string) => alarms(template).find((a) => a.MetricName === name);
    expect(byMetric('5XXError')).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      Statistic: 'Average',
      Threshold: 0.05,
      EvaluationPeriods: 2,
      Dimensions: [{ Name: 'ApiName', Value: 'Ledger-ToolLedger' }],
    });
    expect(byMetric('Latency')).toMatchObject({ ExtendedStatistic: 'p99', Threshold: 20_000 });
  });

  it('alarm when a handler runs for 90% of its timeout', () => {
    const near = alarms(template).filter((a) => a.MetricName === 'Duration');
    expect(near).toHaveLength(3);
    const thresholds = near.map((a) => a.Threshold).sort((a, b) => Number(a) - Number(b));
    const timeouts = ['HTTP API', 'reconciler', 'SQS executor'].map((kind) => lambdaTimeout(template, kind));
    expect(thresholds).toEqual(timeouts.map((s) => Math.floor(s * 1000 * 0.9)).sort((a, b) => a - b));
    for (const alarm of near) expect(alarm.Statistic).toBe('Maximum');
  });

  it('alarm on the age of the oldest dead letter, well before SQS deletes it', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateAgeOfOldestMessage',
      Threshold: 7 * 86_400,
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('DeadLetters'), 'QueueName'] } },
      ],
    });
    expect(() => resolveSettings({ alarmThresholds: { deadLetterAge: Duration.days(14) } })).toThrow(
      /deadLetterAge is not below deadLetterRetention/,
    );
  });
});

describe('throttling', () => {
  it('limits the stage by default (the declared throughput) and POST /v1/reconciliations far lower', () => {
    const stage = Object.values(ofType(template, 'AWS::ApiGateway::Stage'))[0]!;
    const settings = stage.Properties.MethodSettings as Record<string, unknown>[];
    expect(settings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: 2000,
          ThrottlingBurstLimit: 4000,
        }),
        {
          HttpMethod: 'POST',
          ResourcePath: '/~1v1~1reconciliations',
          ThrottlingRateLimit: 1,
          ThrottlingBurstLimit: 2,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          MetricsEnabled: false,
        },
      ]),
    );
  });

  it('takes other limits as props and refuses nonsense', () => {
    const { stack } = ledgerStack({
      apiThrottling: { rateLimit: 20, burstLimit: 40 },
      reconcileThrottling: { rateLimit: 0.5, burstLimit: 1 },
    });
    const stage = Object.values(ofType(Template.fromStack(stack), 'AWS::ApiGateway::Stage'))[0]!;
    expect(JSON.stringify(stage.Properties.MethodSettings)).toContain('"ThrottlingRateLimit":0.5');
    expect(() => resolveSettings({ apiThrottling: { rateLimit: 0, burstLimit: 0 } })).toThrow(
      ToolLedgerConfigError,
    );
  });
});

describe('several instances per account', () => {
  it('creates the account-wide AWS::ApiGateway::Account unless told the account has one', () => {
    template.resourceCountIs('AWS::ApiGateway::Account', 1);
    // With the role, execution logs (errors only) are on by default.
    const stage = Object.values(ofType(template, 'AWS::ApiGateway::Stage'))[0]!;
    expect(JSON.stringify(stage.Properties.MethodSettings)).toContain('"LoggingLevel":"ERROR"');
    const { stack } = ledgerStack({ apiCloudWatchRole: false });
    Template.fromStack(stack).resourceCountIs('AWS::ApiGateway::Account', 0);
  });

  it('gives each instance its own REST API name and metric service dimension', () => {
    const stack = new Stack(testApp(), 'Shared');
    const a = new ToolLedger(stack, 'TeamA');
    const b = new ToolLedger(stack, 'TeamB');
    expect([a.instanceName, b.instanceName]).toEqual(['Shared-TeamA', 'Shared-TeamB']);
    const t = Template.fromStack(stack);
    const names = Object.values(ofType(t, 'AWS::ApiGateway::RestApi')).map((api) => api.Properties.Name);
    expect(names.sort()).toEqual(['Shared-TeamA', 'Shared-TeamB']);
    const services = new Set(
      alarms(t)
        .filter((alarm) => alarm.Namespace === 'ToolLedger')
        .map((alarm) => JSON.stringify(alarm.Dimensions)),
    );
    expect([...services].sort()).toEqual([
      JSON.stringify([{ Name: 'service', Value: 'Shared-TeamA' }]),
      JSON.stringify([{ Name: 'service', Value: 'Shared-TeamB' }]),
    ]);
    const serviceNames = Object.values(ofType(t, 'AWS::Lambda::Function'))
      .filter((fn) => String(fn.Properties.Description).startsWith('tool-ledger'))
      .map(
        (fn) =>
          (fn.Properties.Environment as { Variables: Record<string, string> }).Variables
            .POWERTOOLS_SERVICE_NAME,
      );
    expect(new Set(serviceNames)).toEqual(new Set(['Shared-TeamA', 'Shared-TeamB']));
  });

  it('keeps an explicit serviceName', () => {
    const { ledger } = ledgerStack({ serviceName: 'payments-ledger' });
    expect(ledger.instanceName).toBe('payments-ledger');
    expect(ledger.api.restApiName).toBe('payments-ledger');
  });
});

describe('region and account', () => {
  it('are never taken from CDK_DEFAULT_*: both given, or the template is environment-agnostic', () => {
    const saved = { ...process.env };
    try {
      process.env.CDK_DEFAULT_ACCOUNT = '111122223333';
      process.env.CDK_DEFAULT_REGION = 'us-east-1';
      expect(deploymentEnvironment(undefined, undefined)).toBeUndefined();
    } finally {
      process.env = saved;
    }
    expect(deploymentEnvironment('111122223333', 'eu-west-1')).toEqual({
      account: '111122223333',
      region: 'eu-west-1',
    });
    expect(() => deploymentEnvironment(undefined, 'eu-west-1')).toThrow(/set both toolLedger:account/);
    expect(() => deploymentEnvironment('42', 'eu-west-1')).toThrow(/not 12 digits/);
  });

  it('an environment-agnostic template names no region: kms:ViaService resolves where it is deployed', () => {
    const json = JSON.stringify(template.toJSON());
    expect(json).not.toMatch(/us-east-1|eu-west-1/);
    expect(json).toContain('"dynamodb.",{"Ref":"AWS::Region"},".amazonaws.com"');
  });
});

describe('bring your own', () => {
  it('uses an existing table and its key: creates neither, grants on them', () => {
    const stack = new Stack(testApp(), 'Byo');
    const key = Key.fromKeyArn(stack, 'Key', 'arn:aws:kms:eu-west-1:123456789012:key/abc');
    const table = Table.fromTableAttributes(stack, 'Table', {
      tableArn: 'arn:aws:dynamodb:eu-west-1:123456789012:table/platform-ledger',
      encryptionKey: key,
    });
    new ToolLedger(stack, 'Ledger', { table });
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::DynamoDB::Table', 0);
    expect(Object.values(ofType(t, 'AWS::KMS::Key')).map((k) => k.Properties.Description)).toEqual([
      'tool-ledger: encrypts alarm notifications',
    ]);
    const json = JSON.stringify(t.toJSON());
    expect(json).toContain('table/platform-ledger/index/attention');
    expect(json).toContain('arn:aws:kms:eu-west-1:123456789012:key/abc');
  });

  it('encrypts a new table with a brought key', () => {
    const stack = new Stack(testApp(), 'ByoKey');
    const key = new Key(stack, 'PlatformKey', { enableKeyRotation: true });
    new ToolLedger(stack, 'Ledger', { tableKey: key });
    const t = Template.fromStack(stack);
    t.hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: { KMSMasterKeyId: { 'Fn::GetAtt': [Match.stringLikeRegexp('PlatformKey'), 'Arn'] } },
    });
    expect(Object.values(ofType(t, 'AWS::KMS::Key'))).toHaveLength(2); // the brought one and the alarms'
  });

  it('uses an existing work queue and DLQ: the executor drains it, alarms watch the DLQ', () => {
    const stack = new Stack(testApp(), 'ByoQueue');
    const dlq = new Queue(stack, 'PlatformDlq');
    const queue = new Queue(stack, 'PlatformQueue', {
      visibilityTimeout: Duration.minutes(12),
      deadLetterQueue: { queue: dlq, maxReceiveCount: 5 },
    });
    new ToolLedger(stack, 'Ledger', { queue, deadLetterQueue: dlq });
    const t = Template.fromStack(stack);
    expect(Object.keys(ofType(t, 'AWS::SQS::Queue')).sort()).toEqual(
      [
        stack.getLogicalId(dlq.node.defaultChild as never),
        stack.getLogicalId(queue.node.defaultChild as never),
      ].sort(),
    );
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('PlatformQueue'), 'Arn'] },
    });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('PlatformDlq'), 'QueueName'] } },
      ],
    });
    expect(() => resolveSettings({ queue })).toThrow(/queue and deadLetterQueue go together/);
  });

  it('runs every function that runs tools in the platform’s VPC with its security group (executorNetwork still means network)', () => {
    const stack = new Stack(testApp(), 'ByoVpc');
    const vpc = Vpc.fromVpcAttributes(stack, 'Vpc', {
      vpcId: 'vpc-1',
      availabilityZones: ['eu-west-1a'],
      privateSubnetIds: ['subnet-1'],
    });
    const egress = SecurityGroup.fromSecurityGroupId(stack, 'Egress', 'sg-egress');
    new ToolLedger(stack, 'Ledger', {
      executorNetwork: {
        vpc,
        subnets: { subnets: [Subnet.fromSubnetId(stack, 'S', 'subnet-1')] },
        securityGroups: [egress],
      },
    });
    const t = Template.fromStack(stack);
    const fns = Object.values(ofType(t, 'AWS::Lambda::Function'));
    const inVpc = fns.filter((fn) => fn.Properties.VpcConfig !== undefined);
    expect(inVpc.map((fn) => fn.Properties.Description).sort()).toEqual([
      expect.stringContaining('HTTP API'),
      expect.stringContaining('SQS executor'),
      expect.stringContaining('reconciler'),
    ]);
    for (const fn of inVpc) {
      expect(fn.Properties.VpcConfig).toEqual({ SecurityGroupIds: ['sg-egress'], SubnetIds: ['subnet-1'] });
    }
    // The handlers' roles still have no AWS managed policy: the ENI actions are inline.
    for (const [id, role] of Object.entries(ofType(t, 'AWS::IAM::Role')).filter(([id]) =>
      id.includes('Handler'),
    ))
      expect(role.Properties.ManagedPolicyArns, id).toBeUndefined();
    expect(JSON.stringify(t.toJSON())).toContain('ec2:CreateNetworkInterface');
  });

  it('keeps bring-your-own deployments cdk-nag clean', () => {
    const app = testApp();
    const stack = new Stack(app, 'ByoNag');
    const vpc = Vpc.fromVpcAttributes(stack, 'Vpc', {
      vpcId: 'vpc-1',
      availabilityZones: ['eu-west-1a'],
      privateSubnetIds: ['subnet-1'],
    });
    const ledger = new ToolLedger(stack, 'Ledger', {
      executorNetwork: { vpc },
      apiCloudWatchRole: true,
      apiDetailedMetrics: true,
    });
    ledger.grantOperator(new Role(stack, 'Ops', { assumedBy: new AccountRootPrincipal() }));
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(
      report.violations.flatMap((v) =>
        v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`),
      ),
    ).toEqual([]);
  });
});

describe('tenant bindings outside the environment', () => {
  it('bundles ARNs known at synth, keeps only deploy-time role ARNs in the variable', () => {
    const stack = new Stack(testApp(), 'Bindings');
    const ownRole = new Role(stack, 'AgentRole', { assumedBy: new AccountRootPrincipal() });
    const many = Array.from({ length: 200 }, (_, n) => `arn:aws:iam::123456789012:role/agent-${n}`);
    const settings = resolveSettings({ tenants: { acme: { agents: [...many, ownRole.roleArn] } } });
    const bundled = JSON.parse(apiBundledFiles(settings)['tool-ledger-tenants.json']!);
    expect(bundled.acme.agents).toEqual(many);
    const env = apiEnvironment(stack, settings);
    expect(env.TOOL_LEDGER_IAM_TENANTS_FILE).toBe('/var/task/tool-ledger-tenants.json');
    expect(JSON.stringify(stack.resolve(env.TOOL_LEDGER_IAM_TENANTS))).toContain('AgentRole');
    expect(JSON.stringify(stack.resolve(env.TOOL_LEDGER_IAM_TENANTS))).not.toContain('agent-0');
    // 200 ARNs synthesize (the old 3 KB environment check refused about 40).
    expect(() => new ToolLedger(stack, 'Ledger', { tenants: { acme: { agents: many } } })).not.toThrow();
  });
});

describe('low-severity defaults', () => {
  it('queues follow removalPolicy and carry redrive allow policies', () => {
    const { stack } = ledgerStack({ removalPolicy: RemovalPolicy.DESTROY });
    const queues = Object.values(ofType(Template.fromStack(stack), 'AWS::SQS::Queue'));
    expect(queues.map((q) => q.DeletionPolicy)).toEqual(['Delete', 'Delete']);
    const retained = Object.values(ofType(template, 'AWS::SQS::Queue'));
    expect(retained.map((q) => q.DeletionPolicy)).toEqual(['Retain', 'Retain']);
    const work = retained.find((q) => q.Properties.RedrivePolicy)!;
    const dlq = retained.find((q) => !q.Properties.RedrivePolicy)!;
    expect(work.Properties.RedriveAllowPolicy).toEqual({ redrivePermission: 'denyAll' });
    expect(dlq.Properties.RedriveAllowPolicy).toMatchObject({ redrivePermission: 'byQueue' });
  });

  it('detailed (per-method, billed) stage metrics are off unless asked for', () => {
    const stage = (t: Template) =>
      JSON.stringify(Object.values(ofType(t, 'AWS::ApiGateway::Stage'))[0]!.Properties.MethodSettings);
    expect(stage(template)).not.toContain('"MetricsEnabled":true');
    expect(stage(Template.fromStack(ledgerStack({ apiDetailedMetrics: true }).stack))).toContain(
      '"MetricsEnabled":true',
    );
  });

  it('answers unknown routes and every other gateway error as problem+json', () => {
    for (const [type, status, code] of [
      ['RESOURCE_NOT_FOUND', '404', 'not_found'],
      ['DEFAULT_4XX', undefined, 'request_refused'],
      ['DEFAULT_5XX', undefined, 'gateway_error'],
      ['MISSING_AUTHENTICATION_TOKEN', '401', 'unauthenticated'],
    ] as const) {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        StatusCode: status ?? Match.absent(),
        ResponseParameters: { 'gatewayresponse.header.Content-Type': "'application/problem+json'" },
        ResponseTemplates: { 'application/json': Match.stringLikeRegexp(`"code":"${code}"`) },
      });
    }
  });

  it('access logs carry the integration (Lambda) request ID', () => {
    const stage = Object.values(ofType(template, 'AWS::ApiGateway::Stage'))[0]!;
    const format = JSON.parse((stage.Properties.AccessLogSetting as { Format: string }).Format);
    expect(format.integrationRequestId).toBe('$context.integration.requestId');
  });
});
