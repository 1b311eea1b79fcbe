import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { type IQueue, Queue, QueueEncryption, RedrivePermission } from 'aws-cdk-lib/aws-sqs';
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
}

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
    const deadLetterQueue = new Queue(this, 'DeadLetters', {
      retentionPeriod: props.deadLetterRetention,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
      // Naming the work queue as the only source would be a reference cycle (the work queue names this
      // queue in its redrive policy), so the DLQ allows the queues of this account, SQS's default.
      redriveAllowPolicy: { redrivePermission: RedrivePermission.ALLOW_ALL },
    });
    this.queue = new Queue(this, 'Queue', {
      retentionPeriod: props.retention,
      visibilityTimeout: props.visibilityTimeout,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
      // No other queue may dead-letter into the work queue: its messages must come from senders.
      redriveAllowPolicy: { redrivePermission: RedrivePermission.DENY_ALL },
    });
    this.deadLetterQueue = deadLetterQueue;
  }
}
