import { ArnFormat, type Duration, Names, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Effect, type IRole, PolicyStatement, StarPrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { type CfnQueue, type IQueue, Queue, QueueEncryption, RedrivePermission } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * The work queue the executor drains and its dead-letter queue (the contract, §6). A message that keeps failing
 * is kept in the DLQ as evidence; the ledger, not the queue, decides whether an operation runs.
 */

/** Settings of the queues. */
export interface WorkQueueProps {
  /** Work queue message retention. */
  retention: Duration;
  /** Dead-letter queue message retention. */
  deadLetterRetention: Duration;
  /** At least six times the executor's timeout (the contract, §6), so a slow batch is never delivered twice. */
  visibilityTimeout: Duration;
  /** Receives before a message moves to the DLQ. */
  maxReceiveCount: number;
  /** What happens to both queues (and the messages in them) when the stack is deleted. */
  removalPolicy: RemovalPolicy;
  /**
   * Queues the platform team manages: the work queue must redrive to the DLQ, and its visibility
   * timeout must be at least six times the executor's timeout (synth cannot read an imported queue's
   * settings).
   */
  existing?: { queue: IQueue; deadLetterQueue: IQueue };
  /** A customer-managed key for both queues; SQS-managed encryption without one. */
  key?: IKey;
}

/** What consuming the work queue takes: what only the executor may do. */
const CONSUME_ACTIONS = [
  'sqs:ChangeMessageVisibility',
  'sqs:DeleteMessage',
  'sqs:PurgeQueue',
  'sqs:ReceiveMessage',
];

/** The work queue and its DLQ, encrypted at rest and reachable over TLS only. */
export class WorkQueue extends Construct {
  /** Messages `{"operation_id", "tenant", "tool", "arguments", ...}` for the executor. */
  readonly queue: IQueue;
  /** Messages that failed `maxReceiveCount` times. */
  readonly deadLetterQueue: IQueue;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    if (props.existing) {
      this.queue = props.existing.queue;
      this.deadLetterQueue = props.existing.deadLetterQueue;
      return;
    }
    const encryption = props.key
      ? { encryption: QueueEncryption.KMS, encryptionMasterKey: props.key }
      : { encryption: QueueEncryption.SQS_MANAGED };
    // The work queue has a name fixed at synth, so the DLQ can name it as its only source without a
    // reference cycle (the work queue's redrive policy already names the DLQ).
    const queueName = `${Names.uniqueResourceName(this, { maxLength: 70, separator: '-' })}-work`;
    const deadLetterQueue = new Queue(this, 'DeadLetters', {
      retentionPeriod: props.deadLetterRetention,
      ...encryption,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
    });
    // Only the work queue may dead-letter into the DLQ: another queue's failures would raise its
    // alarms and mix with its evidence.
    (deadLetterQueue.node.defaultChild as CfnQueue).redriveAllowPolicy = {
      redrivePermission: 'byQueue',
      sourceQueueArns: [
        Stack.of(this).formatArn({
          service: 'sqs',
          resource: queueName,
          arnFormat: ArnFormat.NO_RESOURCE_NAME,
        }),
      ],
    };
    this.queue = new Queue(this, 'Queue', {
      queueName,
      retentionPeriod: props.retention,
      visibilityTimeout: props.visibilityTimeout,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
      ...encryption,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
      // No other queue may dead-letter into the work queue: its messages must come from senders.
      redriveAllowPolicy: { redrivePermission: RedrivePermission.DENY_ALL },
    });
    this.deadLetterQueue = deadLetterQueue;
  }

  /**
   * Lets `consumer` alone receive, delete, hide and purge work messages: any other principal, whatever
   * its identity policy says (`sqs:*` of an administrator included), is refused by an explicit Deny, so
   * nobody but the executor can take work off the queue or throw it away. Sending stays with IAM and
   * the sender binding. A brought queue is left as it is (its owner writes its policy).
   */
  restrictConsumers(consumer: IRole): void {
    this.queue.addToResourcePolicy(
      new PolicyStatement({
        sid: 'OnlyTheExecutorConsumes',
        effect: Effect.DENY,
        principals: [new StarPrincipal()],
        actions: CONSUME_ACTIONS,
        resources: [this.queue.queueArn],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': consumer.roleArn } },
      }),
    );
  }
}
