import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../functions/config';
import { LEDGER_ROLES, LEDGER_ROUTES, routeArnPath, routesOf } from '../../functions/contract/routes';
import { apiBundledFiles } from '../../lib/environment';
import { resolveSettings } from '../../lib/settings';
import { EXAMPLE_TENANTS, exampleStack, testApp } from './synth';

const exampleProps = { tenants: EXAMPLE_TENANTS };

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

let template: Template;
let resources: Record<string, Resource>;

/** Resources of one type, by logical ID. */
function ofType(type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

function only<T>(record: Record<string, T>): T {
  const values = Object.values(record);
  expect(values).toHaveLength(1);
  return values[0]!;
}

function logicalIdOf(type: string): string {
  const ids = Object.keys(ofType(type));
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

/** A Lambda function by the handler it runs (its description names it). */
function lambda(kind: 'HTTP API' | 'SQS executor' | 'reconciler'): {
  id: string;
  props: Record<string, unknown>;
} {
  const [id, fn] = Object.entries(ofType('AWS::Lambda::Function')).find(([, r]) =>
    String(r.Properties.Description).includes(kind),
  )!;
  return { id, props: fn.Properties };
}

/** Every Allow statement of every identity policy in the template. */
function allStatements(): Statement[] {
  const policies = { ...ofType('AWS::IAM::Policy'), ...ofType('AWS::IAM::ManagedPolicy') };
  return Object.values(policies).flatMap(
    (policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
  );
}

const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

beforeAll(() => {
  const app = testApp();
  template = Template.fromStack(exampleStack(app));
  resources = template.toJSON().Resources as Record<string, Resource>;
});

describe('ledger table', () => {
  it('is keyed pk/sk, on demand, with TTL on expires_at, PITR and the customer-managed key', () => {
    const [keyId] = Object.entries(ofType('AWS::KMS::Key')).find(([, key]) =>
      String(key.Properties.Description).includes('ledger table'),
    )!;
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: {
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
      },
      DeletionProtectionEnabled: true,
    });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('has the sparse attention and unresolved GSIs and the write-once operations GSI with the keys functions/ledger writes', () => {
    const table = only(ofType('AWS::DynamoDB::Table'));
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'attention',
        KeySchema: [
          { AttributeName: 'attention_shard', KeyType: 'HASH' },
          { AttributeName: 'attention_at', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
      {
        IndexName: 'unresolved',
        KeySchema: [
          { AttributeName: 'unresolved_tenant', KeyType: 'HASH' },
          { AttributeName: 'unresolved_at', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['state', 'attention_at'] },
      },
      {
        IndexName: 'operations',
        KeySchema: [
          { AttributeName: 'operations_tenant', KeyType: 'HASH' },
          { AttributeName: 'operations_at', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['tool'] },
      },
    ]);
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'attention_shard', AttributeType: 'S' },
        { AttributeName: 'attention_at', AttributeType: 'N' },
        { AttributeName: 'unresolved_tenant', AttributeType: 'S' },
        { AttributeName: 'unresolved_at', AttributeType: 'N' },
        { AttributeName: 'operations_tenant', AttributeType: 'S' },
        { AttributeName: 'operations_at', AttributeType: 'N' },
      ]),
    );
  });

  it('is encrypted with a rotating key that is retained with the data', () => {
    template.hasResource('AWS::KMS::Key', {
      Properties: Match.objectLike({
        EnableKeyRotation: true,
        Description: Match.stringLikeRegexp('ledger'),
      }),
      DeletionPolicy: 'Retain',
    });
  });
});

describe('work queue', () => {
  it('has a visibility timeout of at least six times the executor timeout', () => {
    const executorTimeout = lambda('SQS executor').props.Timeout as number;
    const queue = Object.values(ofType('AWS::SQS::Queue')).find((q) => q.Properties.RedrivePolicy)!;
    expect(executorTimeout).toBe(120);
    expect(queue.Properties.VisibilityTimeout as number).toBeGreaterThanOrEqual(6 * executorTimeout);
  });

  it('redrives to an encrypted DLQ after 5 receives, and both queues refuse plain HTTP', () => {
    const queues = ofType('AWS::SQS::Queue');
    const [dlqId] = Object.entries(queues).find(([, q]) => !q.Properties.RedrivePolicy)!;
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] }, maxReceiveCount: 5 },
      MessageRetentionPeriod: 4 * 86_400,
      SqsManagedSseEnabled: true,
    });
    expect(queues[dlqId]!.Properties).toMatchObject({
      MessageRetentionPeriod: 14 * 86_400,
      SqsManagedSseEnabled: true,
    });
    const policies = Object.values(ofType('AWS::SQS::QueuePolicy'));
    expect(policies).toHaveLength(2);
    for (const policy of policies) {
      expect(JSON.stringify(policy.Properties)).toContain('"aws:SecureTransport":"false"');
    }
  });

  it('feeds the executor through an event source that reports batch item failures', () => {
    const executor = lambda('SQS executor');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: executor.id },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 5,
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('WorkQueue'), 'Arn'] },
    });
  });
});

describe('functions', () => {
  it('run on ARM64 and Node.js 24 with their own log group and no AWS managed policy', () => {
    // The four handlers (CDK's own deploy-time provider of the table identity check aside).
    const functions = Object.values(ofType('AWS::Lambda::Function')).filter((fn) =>
      String(fn.Properties.Description).startsWith('tool-ledger'),
    );
    expect(functions).toHaveLength(4);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Architectures: ['arm64'],
        Runtime: 'nodejs24.x',
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
    }
    const logGroups = Object.values(ofType('AWS::Logs::LogGroup'));
    expect(logGroups.length).toBe(5);
    // The provider of the identity check is CDK's; the handlers' roles carry no AWS managed policy.
    for (const group of logGroups) expect(group.Properties.RetentionInDays).toBe(90);
    for (const [id, role] of Object.entries(ofType('AWS::IAM::Role')).filter(([id]) =>
      id.includes('Handler'),
    )) {
      expect(role.Properties.ManagedPolicyArns, id).toBeUndefined();
    }
  });

  it('get the environment functions/config.ts reads, and loadConfig accepts it', () => {
    const api = lambda('HTTP API').props.Environment as { Variables: Record<string, unknown> };
    const env = Object.fromEntries(
      Object.entries(api.Variables).map(([name, value]) => [
        name,
        typeof value === 'string' ? value : `ref:${name}`,
      ]),
    );
    expect(env).toMatchObject({
      TOOL_LEDGER_RETENTION_SECONDS: '2592000',
      TOOL_LEDGER_LEASE_GRACE_MS: '5000',
      TOOL_LEDGER_SYNC_WAIT_MS: '25000',
      TOOL_LEDGER_APPROVAL_TTL_SECONDS: '86400',
      TOOL_LEDGER_ALLOW_SELF_APPROVAL: 'false',
      TOOL_LEDGER_ATTENTION_SHARDS: '8',
      TOOL_LEDGER_UNRESOLVED_SHARDS: '1',
      POWERTOOLS_SERVICE_NAME: 'Ledger-ToolLedger',
      POWERTOOLS_METRICS_NAMESPACE: 'ToolLedger',
      NODE_OPTIONS: '--enable-source-maps',
    });
    expect(api.Variables.TOOL_LEDGER_TABLE_NAME).toEqual({ Ref: logicalIdOf('AWS::DynamoDB::Table') });
    const config = loadConfig(env);
    expect(config).toMatchObject({
      retentionSeconds: 2_592_000,
      syncWaitMs: 25_000,
      attentionShards: 8,
      unresolvedShards: 1,
    });
    // Every ARN of the example is known at synth: all of them are bundled, none in the 4 KB environment.
    expect(JSON.parse(env.TOOL_LEDGER_IAM_TENANTS!)).toEqual({});
    expect(env.TOOL_LEDGER_IAM_TENANTS_FILE).toBe('/var/task/tool-ledger-tenants.json');
    expect(JSON.parse(apiBundledFiles(resolveSettings(exampleProps))['tool-ledger-tenants.json']!)).toEqual({
      acme: {
        agents: ['arn:aws:iam::123456789012:role/acme-agent'],
        approvers: ['arn:aws:iam::123456789012:role/acme-approver'],
        operators: ['arn:aws:iam::123456789012:role/acme-ops'],
      },
      globex: { agents: ['arn:aws:iam::123456789012:role/globex-agent'], approvers: [], operators: [] },
    });
    const executor = lambda('SQS executor').props.Environment as { Variables: Record<string, string> };
    expect(JSON.parse(executor.Variables.TOOL_LEDGER_QUEUE_TENANTS!)).toEqual(['acme', 'globex']);
    expect(executor.Variables.TOOL_LEDGER_IAM_TENANTS).toBeUndefined();
  });

  it('runs the reconciler every minute, without async retries that would overlap the next tick', () => {
    const reconciler = lambda('reconciler');
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [reconciler.id, 'Arn'] } })],
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: reconciler.id },
      MaximumRetryAttempts: 0,
    });
    expect(reconciler.props.Timeout).toBe(60);
  });
});

describe('least privilege', () => {
  it('never grants a wildcard action, and only named DynamoDB actions on the table and its indexes', () => {
    const statements = allStatements().filter((s) => s.Effect === 'Allow');
    for (const statement of statements) {
      for (const action of asArray(statement.Action)) expect(action).not.toContain('*');
    }
    const tableId = logicalIdOf('AWS::DynamoDB::Table');
    const onTable = statements.filter((s) => JSON.stringify(s.Resource).includes(tableId));
    expect(onTable.length).toBeGreaterThan(0);
    const allowed = new Set([
      'dynamodb:GetItem',
      'dynamodb:BatchGetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
    ]);
    for (const statement of onTable) {
      for (const action of asArray(statement.Action)) {
        if (action === 'dynamodb:Scan') {
          // Only the sparse unresolved index, counted for the open-operations gauge.
          expect(JSON.stringify(statement.Resource)).toMatch(/\/index\/unresolved"/);
          expect(JSON.stringify(statement.Resource)).not.toMatch(/\/index\/attention/);
          continue;
        }
        if (
          ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'].includes(action)
        ) {
          // The events function reads the table's stream, and nothing else of it.
          expect(JSON.stringify(statement.Resource)).toContain('StreamArn');
          continue;
        }
        if (action === 'dynamodb:DeleteItem') {
          // Only the read-tool cache items may be deleted; ledger operations never are.
          expect(statement.Condition).toEqual({
            'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['tool-ledger/read#*'] },
          });
          continue;
        }
        expect(allowed).toContain(action);
      }
      expect(JSON.stringify(statement.Resource)).not.toContain('/index/*');
    }
  });

  it('gives each handler only the table access its code path needs', () => {
    const policyOf = (kind: 'HTTP API' | 'SQS executor' | 'reconciler') => {
      const role = (lambda(kind).props.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const policy = Object.values(ofType('AWS::IAM::Policy')).find((p) =>
        JSON.stringify(p.Properties.Roles).includes(role),
      )!;
      const statements = (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
      return statements.flatMap((s) =>
        asArray(s.Action).map(
          (a) => `${a} ${JSON.stringify(s.Resource).includes('/index/') ? 'index' : 'table'}`,
        ),
      );
    };
    expect(policyOf('HTTP API')).toEqual(
      expect.arrayContaining(['dynamodb:PutItem table', 'dynamodb:Query index', 'sqs:SendMessage table']),
    );
    expect(policyOf('SQS executor')).not.toContain('sqs:SendMessage table');
    expect(policyOf('SQS executor')).not.toContain('dynamodb:Query index');
    expect(policyOf('reconciler')).not.toContain('dynamodb:PutItem table');
    expect(policyOf('reconciler')).not.toContain('dynamodb:DeleteItem table');
    expect(policyOf('HTTP API')).toContain('dynamodb:DeleteItem table');
    expect(policyOf('SQS executor')).toContain('dynamodb:DeleteItem table');
    expect(policyOf('reconciler')).toContain('dynamodb:Query index');
  });

  it('keeps the API off the deployment-wide attention index: POST /v1/reconciliations reads the caller’s tenant only', () => {
    const queriedIndexes = (kind: 'HTTP API' | 'SQS executor' | 'reconciler') => {
      const role = (lambda(kind).props.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const policy = Object.values(ofType('AWS::IAM::Policy')).find((p) =>
        JSON.stringify(p.Properties.Roles).includes(role),
      )!;
      const statements = (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
      return statements
        .filter((s) => asArray(s.Action).includes('dynamodb:Query'))
        .flatMap((s) => [...JSON.stringify(s.Resource).matchAll(/\/index\/([a-z]+)/g)].map((m) => m[1]))
        .sort();
    };
    expect(queriedIndexes('HTTP API')).toEqual(['operations', 'unresolved']);
    expect(queriedIndexes('reconciler')).toEqual(['attention']);
    expect(queriedIndexes('SQS executor')).toEqual([]);
    expect(routesOf('operator').map((r) => `${r.method} ${r.path}`)).toContain('POST /v1/reconciliations');
    expect(routesOf('agent').map((r) => `${r.method} ${r.path}`)).not.toContain('POST /v1/reconciliations');
    expect(routesOf('approver').map((r) => `${r.method} ${r.path}`)).not.toContain(
      'POST /v1/reconciliations',
    );
  });
});

describe('API', () => {
  it('requires IAM authorization on every method of every route', () => {
    const methods = Object.values(ofType('AWS::ApiGateway::Method'));
    expect(methods).toHaveLength(LEDGER_ROUTES.length);
    for (const method of methods) {
      expect(method.Properties.AuthorizationType).toBe('AWS_IAM');
      expect(method.Properties.RequestValidatorId).toBeDefined();
      expect(method.Properties.Integration).toMatchObject({ Type: 'AWS_PROXY' });
    }
  });

  it('logs access as JSON, execution errors only, and never request or response data', () => {
    const stage = only(ofType('AWS::ApiGateway::Stage'));
    expect(stage.Properties).toMatchObject({
      StageName: 'prod',
      AccessLogSetting: {
        DestinationArn: expect.anything(),
        Format: expect.stringContaining('$context.requestId'),
      },
      MethodSettings: expect.arrayContaining([
        expect.objectContaining({
          DataTraceEnabled: false,
          LoggingLevel: 'ERROR',
          MetricsEnabled: false,
          HttpMethod: '*',
          ResourcePath: '/*',
        }),
      ]),
    });
    const format = (stage.Properties.AccessLogSetting as { Format: string }).Format;
    expect(format).not.toMatch(/\$context\.(requestOverride|responseOverride)|header/i);
  });

  it('answers gateway errors as problem+json with the handler codes', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'ACCESS_DENIED',
      StatusCode: '403',
      ResponseParameters: { 'gatewayresponse.header.Content-Type': "'application/problem+json'" },
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"forbidden"') },
    });
  });

  it('gives each role a policy that allows exactly its routes', () => {
    const policies = Object.values(ofType('AWS::IAM::ManagedPolicy')).filter((p) =>
      String(p.Properties.Description).includes('execute-api'),
    );
    expect(policies).toHaveLength(LEDGER_ROLES.length);
    for (const role of LEDGER_ROLES) {
      const policy = policies.find((p) =>
        String(p.Properties.Description).startsWith(`tool-ledger ${role}:`),
      )!;
      const [statement] = (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
      expect(statement!.Action).toBe('execute-api:Invoke');
      const suffixes = asArray(statement!.Resource).map((arn) => {
        const parts = (arn as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
        return parts[parts.length - 1];
      });
      expect(suffixes.sort()).toEqual(
        routesOf(role)
          .map((r) => `/${r.method}${routeArnPath(r.path)}`)
          .sort(),
      );
    }
    expect(routesOf('agent').map((r) => `${r.method} ${r.path}`)).not.toContain(
      'POST /v1/operations/{id}/approval',
    );
    expect(routesOf('approver').map((r) => `${r.method} ${r.path}`)).toContain(
      'POST /v1/operations/{id}/approval',
    );
    expect(routesOf('operator').map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['GET /v1/operations', 'POST /v1/operations/{id}/resolution']),
    );
  });
});

describe('monitoring', () => {
  it('alarms on the DLQ, stuck operations, late outcomes, handler errors and throttles', () => {
    const alarms = Object.values(ofType('AWS::CloudWatch::Alarm'));
    const byMetric = (name: string) => alarms.filter((a) => a.Properties.MetricName === name);
    expect(byMetric('ApproximateNumberOfMessagesVisible')).toHaveLength(1);
    expect(byMetric('Errors')).toHaveLength(3);
    expect(byMetric('Throttles')).toHaveLength(3);
    for (const name of [
      'UnresolvedOperations',
      'OpenNeedsReconciliation',
      'LateOutcomes',
      'ReconciliationLatency',
    ]) {
      const [alarm] = byMetric(name);
      expect(alarm?.Properties).toMatchObject({
        Namespace: 'ToolLedger',
        Dimensions: [{ Name: 'service', Value: 'Ledger-ToolLedger' }],
      });
    }
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Dimensions: [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('DeadLetters'), 'QueueName'] } },
      ],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Invocations',
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toHaveLength(1);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
  });

  it('ReconcilerStalled fires after no reconciler run for three intervals, at least 10 minutes, and says so', () => {
    const stalled = (t: Template) => {
      const found = Object.values(
        t.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'Invocations' } }),
      );
      expect(found).toHaveLength(1);
      return found[0]?.Properties as Record<string, unknown>;
    };
    const slow = Template.fromStack(
      exampleStack(testApp(), {
        ledger: { tenants: EXAMPLE_TENANTS, reconcileInterval: Duration.minutes(5) },
      }),
    );
    for (const [t, minutes] of [
      [template, 10],
      [slow, 15],
    ] as const) {
      const alarm = stalled(t);
      expect(alarm).toMatchObject({ Period: minutes * 60, EvaluationPeriods: 1, Threshold: 1 });
      // The description is what the page shows on call: it names the window the alarm measures.
      expect(alarm.AlarmDescription).toContain(`${minutes} minutes`);
      expect(alarm.AlarmDescription).toMatch(/three .*intervals.* at least 10 minutes/);
    }
  });

  it('outputs the API URL, queue URLs, table name and the role policies', () => {
    const outputs = Object.keys(template.toJSON().Outputs as Record<string, unknown>);
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'QueueUrl',
        'DeadLetterQueueUrl',
        'TableName',
        'AgentPolicyArn',
        'ApproverPolicyArn',
        'OperatorPolicyArn',
        'ProducerPolicyArn',
        'AlarmTopicArn',
      ]),
    );
    expect(outputs).toHaveLength(13);
    expect(Object.keys(resources).length).toBeGreaterThan(50);
  });
});
