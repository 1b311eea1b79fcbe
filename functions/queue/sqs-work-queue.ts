import { createHash } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { WorkMessage, WorkQueue } from '../engine/work-queue';
import { inSpan, SpanKind, traceCarrier } from '../observability/tracing';

/**
 * The SQS client's module, loaded at the first send and kept: an `import()` is resolved again at every
 * call where modules are not bundled (local mode runs on tsx, where that costs close to a millisecond).
 */
let sqsModule: Promise<typeof import('@aws-sdk/client-sqs')> | undefined;
function loadSqs(): Promise<typeof import('@aws-sdk/client-sqs')> {
  sqsModule ??= import('@aws-sdk/client-sqs');
  return sqsModule;
}

/**
 * The work queue on SQS. For a FIFO queue the group and deduplication IDs derive from the tenant and
 * operation ID, so SQS itself drops duplicate sends within its five-minute window.
 *
 * The SQS client may be given as a function that builds it: the handlers do so, because most
 * invocations never touch the queue (an executor sends only to retry a message sooner), and loading
 * the SQS client was a large part of every cold start. It is then built at the first send, once.
 *
 * @example
 * ```ts
 * const queue = new SqsWorkQueue(new SQSClient({}), process.env.TOOL_LEDGER_QUEUE_URL!);
 * await queue.enqueue({ operation_id: 'run-42', tenant: 'acme', tool: 'webhook.post', arguments: {} });
 * ```
 */
export class SqsWorkQueue implements WorkQueue {
  private client: Promise<SQSClient> | undefined;

  constructor(
    private readonly source: SQSClient | (() => Promise<SQSClient>),
    private readonly queueUrl: string,
  ) {}

  async enqueue(message: WorkMessage): Promise<void> {
    const fifo = this.queueUrl.endsWith('.fifo');
    const id = createHash('sha256').update(`${message.tenant}\u0000${message.operation_id}`).digest('hex');
    const [client, { SendMessageCommand }] = await Promise.all([this.sqs(), loadSqs()]);
    const queue = this.queueUrl.split('/').pop() ?? 'work';
    await inSpan(
      `send ${queue}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'aws_sqs',
          'messaging.operation.type': 'send',
          'messaging.destination.name': queue,
        },
      },
      async () => {
        // The trace context travels as message attributes (`traceparent`, `tracestate`): the executor
        // continues the trace of whoever enqueued the work.
        const attributes = Object.entries(traceCarrier()).map(
          ([name, value]) => [name, { DataType: 'String', StringValue: value }] as const,
        );
        await client.send(
          new SendMessageCommand({
            QueueUrl: this.queueUrl,
            MessageBody: JSON.stringify(message),
            ...(attributes.length > 0 ? { MessageAttributes: Object.fromEntries(attributes) } : {}),
            ...(fifo ? { MessageGroupId: id, MessageDeduplicationId: `${id}-${Date.now()}` } : {}),
          }),
        );
      },
    );
  }

  async retryAfter(receiptHandle: string, seconds: number): Promise<void> {
    const [client, { ChangeMessageVisibilityCommand }] = await Promise.all([this.sqs(), loadSqs()]);
    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }

  private sqs(): Promise<SQSClient> {
    if (this.client === undefined) {
      const source = this.source;
      this.client = typeof source === 'function' ? source() : Promise.resolve(source);
      // A client that could not be built is built again at the next send.
      this.client.catch(() => {
        this.client = undefined;
      });
    }
    return this.client;
  }
}
