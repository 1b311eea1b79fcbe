import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { READ_CACHE_KEY_PREFIX, TENANT_PATTERN } from '../../functions/contract/table';
import { ToolLedger } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

/**
 * The queues and the keys: only the executor consumes the work queue, only the work queue dead-letters
 * into the DLQ, queues and log groups take customer-managed keys, and no tenant's records fall under
 * the read cache's delete grant whatever the tenant is called.
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

describe('the work queue', () => {
  it('lets only the executor receive, delete, hide or purge its messages', () => {
    const queue = idOf(template, 'AWS::SQS::Queue', /WorkQueue/);
    const executorRole = idOf(template, 'AWS::IAM::Role', /ExecutorHandlerRole/);
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queue }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Principal: '*',
            Action: [
              'sqs:ChangeMessageVisibility',
              'sqs:DeleteMessage',
              'sqs:PurgeQueue',
              'sqs:ReceiveMessage',
            ],
            Condition: { ArnNotEquals: { 'aws:PrincipalArn': { 'Fn::GetAtt': [executorRole, 'Arn'] } } },
          }),
        ]),
      },
    });
  });
});

describe('the dead-letter queue', () => {
  it('accepts dead letters from the work queue alone', () => {
    const dlq = resources(template)[idOf(template, 'AWS::SQS::Queue', /DeadLetters/)]!;
    const work = resources(template)[idOf(template, 'AWS::SQS::Queue', /WorkQueue/)]!;
    const name = work.Properties.QueueName as string;
    expect(name).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    expect(dlq.Properties.RedriveAllowPolicy).toEqual({
      redrivePermission: 'byQueue',
      sourceQueueArns: [
        {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':sqs:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              `:${name}`,
            ],
          ],
        },
      ],
    });
  });
});

describe('customer-managed keys', () => {
  it('encrypt both queues and every log group with the keys given, and let senders and logs use them', () => {
    const stack = new Stack(testApp(), 'Keys');
    const queueKey = new Key(stack, 'QueueKey');
    const logKey = new Key(stack, 'LogKey');
    const ledger = new ToolLedger(stack, 'Ledger', { queueKey, logKey });
    ledger.grantEnqueue(new Role(stack, 'Orchestrator', { assumedBy: new AccountRootPrincipal() }));
    const t = Template.fromStack(stack);
    const queueKeyId = idOf(t, 'AWS::KMS::Key', /QueueKey/);
    const logKeyId = idOf(t, 'AWS::KMS::Key', /LogKey/);
    const queues = Object.values(resources(t)).filter((r) => r.Type === 'AWS::SQS::Queue');
    expect(queues).toHaveLength(2);
    for (const queue of queues) {
      expect(queue.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [queueKeyId, 'Arn'] });
    }
    const logGroups = Object.values(resources(t)).filter((r) => r.Type === 'AWS::Logs::LogGroup');
    expect(logGroups.length).toBeGreaterThanOrEqual(4);
    for (const group of logGroups) {
      expect(group.Properties.KmsKeyId).toEqual({ 'Fn::GetAtt': [logKeyId, 'Arn'] });
    }
    t.hasResourceProperties('AWS::KMS::Key', {
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Principal: { Service: { 'Fn::Join': ['', ['logs.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
          }),
        ]),
      },
    });
    // The producer policy can encrypt what it sends.
    t.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      Description: Match.stringLikeRegexp('producer'),
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
            Resource: { 'Fn::GetAtt': [queueKeyId, 'Arn'] },
          }),
        ]),
      },
    });
  });
});

describe('tenant names and the read cache', () => {
  it('no tenant’s operation key falls under the read cache’s delete grant, whatever the tenant is called', () => {
    expect(operationKey('tool-ledger.read', 'op-1').pk.startsWith(READ_CACHE_KEY_PREFIX)).toBe(false);
    fc.assert(
      fc.property(
        fc.stringMatching(TENANT_PATTERN),
        fc.string({ minLength: 1, maxLength: 20 }),
        (tenant, id) => {
          expect(operationKey(tenant, id).pk.startsWith(READ_CACHE_KEY_PREFIX)).toBe(false);
        },
      ),
    );
  });
});
