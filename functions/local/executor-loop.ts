import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { errorClass } from '../domain/errors';
import { logger } from '../observability/logger';
import { invoke, type LocalFunction } from './lambda-context';

/**
 * What Lambda's SQS event source mapping does, on one machine: long-poll the work queue, hand each batch
 * to the executor handler under the function's hard deadline, delete the messages the handler did not
 * report in `batchItemFailures`, and leave the failed ones alone so that SQS makes them visible again
 * after the visibility timeout (and moves them to the DLQ after `maxReceiveCount` receives).
 *
 * One loop is one concurrent executor: its batches run one after another, the records of a batch in
 * parallel. Local mode runs `TOOL_LEDGER_EXECUTOR_CONCURRENCY` loops, like a function with that
 * reserved concurrency.
 */

/** The executor handler's signature (functions/handlers/executor.ts). */
export type ExecutorHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/** Settings of one loop. */
export interface ExecutorLoopOptions {
  client: SQSClient;
  queueUrl: string;
  /** Put in each record's `eventSourceARN`, as Lambda does. */
  queueArn: string;
  handler: ExecutorHandler;
  /** The executor function: its name and timeout (the hard deadline of each batch). */
  fn: LocalFunction;
  /** Messages per batch, 1 to 10. @default 10 */
  batchSize?: number;
  /** Long-poll wait, seconds. @default 20 */
  waitTimeSeconds?: number;
  /** Pause after a failed receive, ms. @default 1000 */
  errorPauseMs?: number;
}

/** What one batch came to, for tests and logs. */
export interface BatchReport {
  received: number;
  deleted: number;
  failed: number;
  /** The handler did not return before the function's timeout. */
  timedOut: boolean;
}

/**
 * A polling loop over the work queue.
 *
 * @example
 * ```ts
 * const loop = new ExecutorLoop({ client, queueUrl, queueArn, handler, fn: { name: 'executor', timeoutMs: 120_000 } });
 * loop.start();
 * await loop.stop(30_000);
 * ```
 */
export class ExecutorLoop {
  private stopping = false;
  private running: Promise<void> | undefined;
  private poll: AbortController | undefined;
  private batch: Promise<BatchReport> | undefined;
  private wake: (() => void) | undefined;
  private readonly listeners = new Set<(report: BatchReport) => void>();

  constructor(private readonly options: ExecutorLoopOptions) {}

  /** Starts polling (once). */
  start(): void {
    this.running ??= this.run();
  }

  /** Calls `listener` after every batch (tests wait on it instead of sleeping). */
  onBatch(listener: (report: BatchReport) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Stops polling and waits for the batch in flight, at most `graceMs`. Returns false if the batch was
   * still running then (its messages stay on the queue and will be delivered again).
   */
  async stop(graceMs: number): Promise<boolean> {
    this.stopping = true;
    this.poll?.abort();
    this.wake?.();
    const inFlight = this.batch;
    let drained = true;
    if (inFlight) {
      let timer: NodeJS.Timeout | undefined;
      drained = await Promise.race([
        inFlight.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    if (drained) await this.running;
    return drained;
  }

  private async run(): Promise<void> {
    const { client, queueUrl } = this.options;
    while (!this.stopping) {
      let messages: Message[];
      this.poll = new AbortController();
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: this.options.batchSize ?? 10,
            WaitTimeSeconds: this.options.waitTimeSeconds ?? 20,
            MessageSystemAttributeNames: ['All'],
            // The sender's trace context (`traceparent`), as Lambda's event source passes it on.
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.poll.signal },
        );
        messages = out.Messages ?? [];
      } catch (error) {
        if (this.stopping) break;
        logger.warn('executor receive failed', { error_class: errorClass(error) });
        await this.pause(this.options.errorPauseMs ?? 1_000);
        continue;
      }
      if (messages.length === 0) continue;
      this.batch = this.runBatch(messages);
      const report = await this.batch;
      this.batch = undefined;
      for (const listener of this.listeners) listener(report);
    }
  }

  private async runBatch(messages: Message[]): Promise<BatchReport> {
    const { fn, handler } = this.options;
    const event: SQSEvent = { Records: messages.map((m) => this.toRecord(m)) };
    let failed: Set<string>;
    let timedOut = false;
    try {
      const response = await invoke(fn, handler, event);
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      // A thrown error or a timeout fails the whole batch, as on Lambda: nothing is deleted.
      timedOut = error instanceof Error && error.name === 'LambdaTimeoutError';
      logger.error('executor invocation failed', {
        error_class: errorClass(error),
        records: messages.length,
      });
      failed = new Set(event.Records.map((r) => r.messageId));
    }
    const done = messages.filter((m) => m.MessageId !== undefined && !failed.has(m.MessageId));
    let deleted = 0;
    if (done.length > 0) {
      try {
        const out = await this.options.client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.options.queueUrl,
            Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
          }),
        );
        deleted = out.Successful?.length ?? 0;
        if ((out.Failed?.length ?? 0) > 0)
          logger.warn('executor delete failed', { records: out.Failed?.length });
      } catch (error) {
        // The messages come back after the visibility timeout; the ledger replays them without effect.
        logger.warn('executor delete failed', { error_class: errorClass(error), records: done.length });
      }
    }
    return { received: messages.length, deleted, failed: failed.size, timedOut };
  }

  private toRecord(message: Message): SQSRecord {
    const attributes = message.Attributes ?? {};
    return {
      messageId: message.MessageId ?? '',
      receiptHandle: message.ReceiptHandle ?? '',
      body: message.Body ?? '',
      attributes: {
        ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
        SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
        SenderId: attributes.SenderId ?? '000000000000',
        ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: Object.fromEntries(
        Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
          name,
          {
            dataType: value.DataType ?? 'String',
            ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
          },
        ]),
      ),
      md5OfBody: message.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.options.queueArn,
      awsRegion: 'us-east-1',
    };
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
