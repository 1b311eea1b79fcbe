import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { InterfaceVpcEndpoint, InterfaceVpcEndpointAwsService, Vpc } from 'aws-cdk-lib/aws-ec2';
import { beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger, type ToolLedgerProps } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

/**
 * The defaults a platform team needs on its first deploy and at 1,000 operations a second: the
 * account's API Gateway logging role, egress control for every function that runs tools, limits per
 * tenant, reserved concurrency for the API, recovery throughput, memory per function, and the API's
 * endpoint, domain and stage.
 */

type Props = Record<string, unknown>;
type Resource = { Type: string; Properties: Props; DeletionPolicy?: string; DependsOn?: string[] };
let template: Template;
beforeAll(() => {
  template = Template.fromStack(exampleStack(testApp()));
});

const ofType = (t: Template, type: string) => Object.entries(t.findResources(type)) as [string, Resource][];
const fnOf = (t: Template, kind: string) =>
  ofType(t, 'AWS::Lambda::Function').find(([, fn]) => String(fn.Properties.Description).includes(kind))![1]
    .Properties;
const envOf = (t: Template, kind: string) =>
  (fnOf(t, kind).Environment as { Variables: Record<string, unknown> }).Variables;
const KINDS = ['HTTP API', 'SQS executor', 'reconciler'];

function ledgerStack(props: ToolLedgerProps = {}, id = 'Custom') {
  const stack = new Stack(testApp(), id);
  return { stack, ledger: new ToolLedger(stack, 'Ledger', props) };
}

describe('the account-level API Gateway logging role', () => {
  it('is created by default, retained whatever the removal policy, and the stage waits for it', () => {
    for (const t of [
      template,
      Template.fromStack(ledgerStack({ removalPolicy: RemovalPolicy.DESTROY }).stack),
    ]) {
      const accounts = ofType(t, 'AWS::ApiGateway::Account');
      expect(accounts).toHaveLength(1);
      const [accountId, account] = accounts[0]!;
      expect(account.DeletionPolicy).toBe('Retain');
      const roleId = (account.Properties.CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })[
        'Fn::GetAtt'
      ][0];
      const role = t.toJSON().Resources[roleId] as Resource;
      expect(role.DeletionPolicy).toBe('Retain');
      expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain(
        'AmazonAPIGatewayPushToCloudWatchLogs',
      );
      const [, stage] = ofType(t, 'AWS::ApiGateway::Stage')[0]!;
      expect(stage.DependsOn).toContain(accountId);
    }
  });

  it('is one per stack however many instances it holds, and none when the account already has one', () => {
    const stack = new Stack(testApp(), 'Two');
    new ToolLedger(stack, 'A');
    new ToolLedger(stack, 'B');
    Template.fromStack(stack).resourceCountIs('AWS::ApiGateway::Account', 1);
    const t = Template.fromStack(ledgerStack({ apiCloudWatchRole: false }).stack);
    t.resourceCountIs('AWS::ApiGateway::Account', 0);
    // Access logs stay on; execution logs follow the role unless set.
    const [, stage] = ofType(t, 'AWS::ApiGateway::Stage')[0]!;
    expect(stage.Properties.AccessLogSetting).toBeDefined();
    expect(JSON.stringify(stage.Properties.MethodSettings)).toContain('"LoggingLevel":"OFF"');
  });
});

describe('egress of every function that runs tools', () => {
  it('puts the API, the executor and the reconciler in the VPC given as network', () => {
    const stack = new Stack(testApp(), 'Net');
    const vpc = Vpc.fromVpcAttributes(stack, 'Vpc', {
      vpcId: 'vpc-1',
      availabilityZones: ['eu-west-1a'],
      privateSubnetIds: ['subnet-1'],
    });
    new ToolLedger(stack, 'Ledger', { network: { vpc } });
    const t = Template.fromStack(stack);
    for (const kind of KINDS) {
      expect(fnOf(t, kind).VpcConfig, kind).toMatchObject({ SubnetIds: ['subnet-1'] });
    }
  });

  it('refuses network and the older executorNetwork together', () => {
    const stack = new Stack(testApp(), 'Both');
    const vpc = Vpc.fromVpcAttributes(stack, 'Vpc', {
      vpcId: 'vpc-1',
      availabilityZones: ['eu-west-1a'],
      privateSubnetIds: ['subnet-1'],
    });
    expect(() => new ToolLedger(stack, 'Ledger', { network: { vpc }, executorNetwork: { vpc } })).toThrow(
      /network and executorNetwork/,
    );
  });
});

describe('limits at 1,000 operations a second', () => {
  it('limits each tenant in the API handler, sized from the declared throughput', () => {
    expect(JSON.parse(String(envOf(template, 'HTTP API')[SETTINGS.tenantRateLimits.name]))).toEqual({
      '*': 400,
    });
    const t = Template.fromStack(
      ledgerStack({
        tenants: { acme: { agents: ['arn:aws:iam::123456789012:role/acme-agent'] } },
        declaredThroughput: { firstExecutionsPerSecond: 4000, perTenant: 800 },
        tenantRateLimits: { acme: 1200 },
      }).stack,
    );
    expect(JSON.parse(String(envOf(t, 'HTTP API')[SETTINGS.tenantRateLimits.name]))).toEqual({
      '*': 800,
      acme: 1200,
    });
    expect(() => resolveSettings({ tenantRateLimits: { '*': 0 } })).toThrow(/tenantRateLimits/);
    expect(() => resolveSettings({ tenantRateLimits: { ghost: 10 } })).toThrow(/not in tenants/);
  });

  it('sizes the stage limit from the declared throughput, not a fixed 100 requests a second', () => {
    const [, stage] = ofType(template, 'AWS::ApiGateway::Stage')[0]!;
    expect(stage.Properties.MethodSettings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          ResourcePath: '/*',
          ThrottlingRateLimit: 2000,
          ThrottlingBurstLimit: 4000,
        }),
      ]),
    );
  });

  it('reserves concurrency for the API, so it neither starves nor takes the account', () => {
    expect(fnOf(template, 'HTTP API').ReservedConcurrentExecutions).toBe(200);
    const t = Template.fromStack(ledgerStack({ reservedConcurrency: { api: false } }).stack);
    expect(fnOf(t, 'HTTP API').ReservedConcurrentExecutions).toBeUndefined();
  });

  it('decides 16 records at a time after an outage, and takes another figure as a prop', () => {
    expect(envOf(template, 'reconciler')[SETTINGS.reconcileParallelism.name]).toBe('16');
    const t = Template.fromStack(ledgerStack({ reconcileParallelism: 32 }).stack);
    for (const kind of ['HTTP API', 'reconciler']) {
      expect(envOf(t, kind)[SETTINGS.reconcileParallelism.name]).toBe('32');
    }
    expect(() => resolveSettings({ reconcileParallelism: 0 })).toThrow(ToolLedgerConfigError);
  });
});

describe('memory per function', () => {
  it('takes one size for all or a size per function', () => {
    expect(KINDS.map((kind) => fnOf(template, kind).MemorySize)).toEqual([512, 512, 512]);
    const t = Template.fromStack(ledgerStack({ memorySize: { api: 1024, executor: 2048 } }).stack);
    expect(KINDS.map((kind) => fnOf(t, kind).MemorySize)).toEqual([1024, 2048, 512]);
    expect(() => resolveSettings({ memorySize: { reconciler: 64 } })).toThrow(/memorySize.reconciler/);
  });
});

describe('the API endpoint, domain and stage', () => {
  it('names the stage as asked and keeps the ARNs and resource policy on it', () => {
    const t = Template.fromStack(ledgerStack({ stageName: 'v1live' }).stack);
    const [, stage] = ofType(t, 'AWS::ApiGateway::Stage')[0]!;
    expect(stage.Properties.StageName).toBe('v1live');
    expect(JSON.stringify(t.toJSON())).toContain('/v1live/POST/v1/operations');
    expect(JSON.stringify(t.toJSON())).not.toContain('/prod/');
  });

  it('serves a private endpoint only through the VPC endpoints given', () => {
    const stack = new Stack(testApp(), 'Private');
    const vpc = new Vpc(stack, 'Vpc', { maxAzs: 1, natGateways: 0 });
    const endpoint = new InterfaceVpcEndpoint(stack, 'ExecuteApi', {
      vpc,
      service: InterfaceVpcEndpointAwsService.APIGATEWAY,
    });
    new ToolLedger(stack, 'Ledger', { endpoint: { private: { vpcEndpoints: [endpoint] } } });
    const t = Template.fromStack(stack);
    t.hasResourceProperties('AWS::ApiGateway::RestApi', {
      EndpointConfiguration: {
        Types: ['PRIVATE'],
        VpcEndpointIds: [{ Ref: Match.stringLikeRegexp('ExecuteApi') }],
      },
      Policy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Condition: {
              StringNotEquals: { 'aws:SourceVpce': [{ Ref: Match.stringLikeRegexp('ExecuteApi') }] },
            },
          }),
        ]),
      },
    });
  });

  it('maps a custom domain to the stage', () => {
    const stack = new Stack(testApp(), 'Domain');
    const certificate = Certificate.fromCertificateArn(
      stack,
      'Cert',
      'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
    );
    new ToolLedger(stack, 'Ledger', { domainName: { name: 'ledger.acme.example', certificate } });
    const t = Template.fromStack(stack);
    t.hasResourceProperties('AWS::ApiGateway::DomainName', {
      DomainName: 'ledger.acme.example',
      SecurityPolicy: 'TLS_1_2',
    });
    t.resourceCountIs('AWS::ApiGateway::BasePathMapping', 1);
  });
});
