import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { EventQueue } from './completion-events';

/** Options of {@link sqsEventQueue}. */
export interface SqsEventQueueOptions {
  /**
   * URL of the queue the completion events arrive on: local mode's events queue
   * (`tool-ledger-events`), or on AWS a queue an EventBridge rule on the ledger's bus targets.
   */
  queueUrl: string;
  /** @default `new SQSClient({})` (region and credentials from the environment) */
  sqs?: SQSClient;
}

/** SQS's longest long poll, seconds. */
const MAX_WAIT_SECONDS = 20;

/**
 * An SQS queue as the {@link EventQueue} of `ToolLedgerClient.waitForEvent`: long polls of up to 20 s
 * (to the wait's deadline, rounded up to a whole second), ten messages at a time; a message is deleted only when the waiter
 * found it to be an event of its own operation.
 *
 * @example
 * ```ts
 * const events = sqsEventQueue({ queueUrl: eventsQueueUrl, sqs: new SQSClient({ endpoint: sqsEndpoint }) });
 * const done = await client.waitForEvent(operationId, { events });
 * ```
 */
export function sqsEventQueue(options: SqsEventQueueOptions): EventQueue {
  const sqs = options.sqs ?? new SQSClient({});
  const queueUrl = options.queueUrl;
  return {
    async receive({ waitMs, signal }) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          // Whole seconds, rounded up: a last sub-second wait is one long poll, not a spin of short ones.
          WaitTimeSeconds: Math.min(MAX_WAIT_SECONDS, Math.max(1, Math.ceil(waitMs / 1000))),
        }),
        signal === undefined ? {} : { abortSignal: signal },
      );
      return (out.Messages ?? []).map((message) => ({
        body: message.Body ?? '',
        async delete() {
          await sqs.send(
            new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
          );
        },
      }));
    },
  };
}
