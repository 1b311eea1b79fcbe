import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';

/**
 * The SNS topic the alarms notify when the deployment brings none: an alarm without an action tells
 * no one. The topic is encrypted with a key of its own, because CloudWatch can publish to an encrypted
 * topic only when the key lets it (an AWS managed key cannot), and the key lets CloudWatch in for this
 * account's alarms only.
 */

/** Settings of the topic. */
export interface AlarmTopicProps {
  /** What happens to the key when the stack is deleted. */
  removalPolicy: RemovalPolicy;
}

/** An encrypted, TLS-only topic for alarm and OK notifications; subscribe people or a pager to it. */
export class AlarmTopic extends Construct {
  /** The topic. */
  readonly topic: Topic;
  /** The key that encrypts it. */
  readonly key: Key;

  constructor(scope: Construct, id: string, props: AlarmTopicProps) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: 'tool-ledger: encrypts alarm notifications',
      enableKeyRotation: true,
      pendingWindow: Duration.days(props.removalPolicy === RemovalPolicy.DESTROY ? 7 : 30),
      removalPolicy: props.removalPolicy,
    });
    // Confused-deputy guard: only alarms of this account may use the key through CloudWatch.
    this.key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );
    this.topic = new Topic(this, 'Topic', { masterKey: this.key, enforceSSL: true });
  }
}
