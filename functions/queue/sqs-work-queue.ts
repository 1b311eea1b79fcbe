import { createHash } from 'node:crypto';
import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { WorkMessage, WorkQueue } from '../engine/work-queue';

/**
 * The work queue on SQS. For a FIFO queue the group and deduplication IDs derive from the tenant and
 * operation ID, so SQS itself drops duplicate sends within its five-minute window.
 *
 * @example
 * ```ts
 * const queue = new SqsWorkQueue(new SQSClient({}), process.env.TOOL_LEDGER_QUEUE_URL!);
 * await queue.enqueue({ operation_id: 'run-42', tenant: 'acme', tool: 'webhook.post', arguments: {} });
 * ```
 */
export class SqsWorkQueue implements WorkQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(message: WorkMessage): Promise<void> {
    const fifo = this.queueUrl.endsWith('.fifo');
    const id = createHash('sha256').update(`${message.tenant}\u0000${message.operation_id}`).digest('hex');
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        ...(fifo ? { MessageGroupId: id, MessageDeduplicationId: `${id}-${Date.now()}` } : {}),
      }),
    );
  }

  async retryAfter(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }
}
