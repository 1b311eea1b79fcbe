import { Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { ToolLedger } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

/**
 * The bucket of whole results: encrypted with the deployment's key, TLS only, never public,
 * versioning off, objects expiring a day after the longest retention of the records; only the
 * functions that commit outcomes may write results and only the API may read them; or the platform
 * team's own bucket.
 */

type Props = Record<string, unknown>;
type Resource = { Type: string; Properties: Props };
let template: Template;
beforeAll(() => {
  template = Template.fromStack(exampleStack(testApp()));
});
const resources = (t: Template) => t.toJSON().Resources as Record<string, Resource>;
const idOf = (t: Template, type: string, pattern: RegExp) =>
  Object.entries(resources(t)).find(([id, r]) => r.Type === type && pattern.test(id))![0];

/** Every IAM statement attached to a role, with its actions as a list. */
function statementsOf(
  t: Template,
  role: string,
): { Action: string[]; Resource: unknown; Condition?: unknown }[] {
  return Object.values(resources(t))
    .filter(
      (r) =>
        r.Type === 'AWS::IAM::Policy' &&
        JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: role }]),
    )
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Props[] }).Statement)
    .map((s) => ({ ...s, Action: ([] as string[]).concat(s.Action as string | string[]) })) as never;
}

const s3Actions = (t: Template, role: RegExp) =>
  statementsOf(t, idOf(t, 'AWS::IAM::Role', role))
    .flatMap((s) => s.Action)
    .filter((a) => a.startsWith('s3:'))
    .sort();

describe('the results bucket', () => {
  it('is encrypted with the table’s key, private, TLS only and unversioned', () => {
    const key = idOf(template, 'AWS::KMS::Key', /Ledger/);
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          {
            BucketKeyEnabled: true,
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: 'aws:kms',
              KMSMasterKeyID: { 'Fn::GetAtt': [key, 'Arn'] },
            },
          },
        ],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      VersioningConfiguration: Match.absent(),
    });
    const bucket = idOf(template, 'AWS::S3::Bucket', /Results/);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('expires results a day after the longest retention of the records', () => {
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: [Match.objectLike({ Prefix: 'results/', ExpirationInDays: 31, Status: 'Enabled' })],
      },
    });
    const app = testApp();
    const stack = new Stack(app, 'Long');
    new ToolLedger(stack, 'Ledger', {
      retention: Duration.days(40),
      toolRetentions: { 'webhook.post': Duration.days(90) },
    });
    Template.fromStack(stack).hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: { Rules: [Match.objectLike({ ExpirationInDays: 91 })] },
    });
  });

  it('lets the functions that commit outcomes write results, and only the API read them, under results/ only', () => {
    expect(s3Actions(template, /ApiHandlerRole/)).toEqual(['s3:GetObject', 's3:PutObject']);
    expect(s3Actions(template, /ExecutorHandlerRole/)).toEqual(['s3:PutObject']);
    expect(s3Actions(template, /ReconcilerHandlerRole/)).toEqual(['s3:PutObject']);
    const bucket = idOf(template, 'AWS::S3::Bucket', /Results/);
    for (const role of [/ApiHandlerRole/, /ExecutorHandlerRole/, /ReconcilerHandlerRole/]) {
      const statements = statementsOf(template, idOf(template, 'AWS::IAM::Role', role)).filter((s) =>
        s.Action.some((a) => a.startsWith('s3:')),
      );
      for (const s of statements) {
        expect(s.Resource).toEqual({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/results/*']] });
      }
      // The key is usable for these objects through S3 only.
      const kms = statementsOf(template, idOf(template, 'AWS::IAM::Role', role)).filter((s) =>
        JSON.stringify(s.Condition ?? {}).includes('s3.'),
      );
      expect(kms.length).toBeGreaterThan(0);
      for (const s of kms) expect(s.Action.every((a) => a.startsWith('kms:'))).toBe(true);
    }
  });

  it('names the bucket to every function that commits outcomes', () => {
    const bucket = idOf(template, 'AWS::S3::Bucket', /Results/);
    for (const fn of [/ApiHandler[0-9A-F]/, /ExecutorHandler[0-9A-F]/, /ReconcilerHandler[0-9A-F]/]) {
      const id = Object.entries(resources(template)).find(
        ([name, r]) => r.Type === 'AWS::Lambda::Function' && fn.test(name),
      )![0];
      const env = (resources(template)[id]!.Properties.Environment as { Variables: Props }).Variables;
      expect(env[SETTINGS.resultsBucket.name]).toEqual({ Ref: bucket });
    }
  });

  it('takes the platform team’s own bucket instead, and creates none', () => {
    const app = testApp();
    const stack = new Stack(app, 'Own');
    const own = Bucket.fromBucketName(stack, 'Own', 'team-results');
    const ledger = new ToolLedger(stack, 'Ledger', { resultsBucket: own });
    const t = Template.fromStack(stack);
    expect(ledger.resultsBucket.bucketName).toBe('team-results');
    t.resourceCountIs('AWS::S3::Bucket', 0);
    expect(s3Actions(t, /ApiHandlerRole/)).toEqual(['s3:GetObject', 's3:PutObject']);
    expect(JSON.stringify(t.toJSON())).toContain('arn:');
    expect(JSON.stringify(t.toJSON())).toContain(':s3:::team-results/results/*');
  });
});
