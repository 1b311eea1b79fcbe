import type { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * The work queue the executor drains and its dead-letter queue (SPEC §6). A message that keeps failing
 * is kept in the DLQ as evidence; the ledger, not the queue, decides whether an operation runs.
 */

/** Settings of the queues. */
export interface WorkQueueProps {
  /** Work queue message retention. */
  retention: Duration;
  /** Dead-letter queue message retention. */
  deadLetterRetention: Duration;
  /** At least six times the executor's timeout (SPEC §6), so a slow batch is never delivered twice. */
  visibilityTimeout: Duration;
  /** Receives before a message moves to the DLQ. */
  maxReceiveCount: number;
}

/** The work queue and its DLQ, encrypted at rest and reachable over TLS only. */
export class WorkQueue extends Construct {
  /** Messages `{"operation_id", "tenant", "tool", "arguments", ...}` for the executor. */
  readonly queue: Queue;
  /** Messages that failed `maxReceiveCount` times. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      retentionPeriod: props.deadLetterRetention,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.queue = new Queue(this, 'Queue', {
      retentionPeriod: props.retention,
      visibilityTimeout: props.visibilityTimeout,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
  }
}
