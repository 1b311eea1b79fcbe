import { Annotations, ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';

/**
 * The SNS topic the alarms notify when the deployment brings none: an alarm without an action tells
 * no one. The topic is encrypted with a key of its own, because CloudWatch can publish to an encrypted
 * topic only when the key lets it (an AWS managed key cannot), and the key lets CloudWatch in for this
 * account's alarms only. The topic's policy holds TLS-only (a deny) and an allow for CloudWatch to
 * publish: a topic with a resource policy accepts what the policy allows, and CloudWatch alarms
 * publish as the `cloudwatch.amazonaws.com` service, so the allow is what lets a notification through
 * whether or not the account's own principals are otherwise allowed.
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

/**
 * Lets CloudWatch alarms of this account publish to `topic` (`sns:Publish` for the service principal,
 * only from this account's alarm ARNs). A topic imported from elsewhere cannot be changed from here:
 * synth warns, and the topic's owner must add the same statement.
 */
export function allowAlarmsToPublish(scope: Construct, topic: ITopic): void {
  const stack = Stack.of(scope);
  const added = topic.addToResourcePolicy(
    new PolicyStatement({
      sid: 'AllowCloudWatchAlarmsToPublish',
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: {
        ArnLike: {
          'aws:SourceArn': stack.formatArn({
            service: 'cloudwatch',
            resource: 'alarm',
            resourceName: '*',
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        },
        StringEquals: { 'aws:SourceAccount': stack.account },
      },
    }),
  );
  if (!added.statementAdded) {
    Annotations.of(scope).addWarningV2(
      'tool-ledger:alarm-topic-policy',
      'The alarm topic is not a topic of this app, so its policy cannot be changed from here: make sure it ' +
        'allows cloudwatch.amazonaws.com to sns:Publish (aws:SourceAccount of this account), and that its key, ' +
        'if any, lets CloudWatch use it; otherwise the alarms change state and tell no one.',
    );
  }
}
