import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { errorClass } from '../domain/errors';
import { newRequest } from '../engine/ledger-deps';
import type { WorkQueue } from '../engine/work-queue';
import { logger } from '../observability/logger';
import { inSpan, parentFrom, SpanKind, sqsCarrier } from '../observability/tracing';
import type { Runtime } from '../wiring';
import { handleWorkMessage } from './handle-work-message';

/**
 * The SQS executor's front door (the contract, §6): a thin adapter from an SQS batch to {@link handleWorkMessage}. Each record
 * whose verdict is `retry` is reported in `batchItemFailures` (SQS redelivers it, then the DLQ keeps
 * it); every other record is acknowledged, because the ledger owns its outcome now.
 */

/** Thrown inside the record handler so that Powertools reports the record as failed. */
export class WorkMessageRetryError extends Error {
  /** The verdict's code (`failed_retryable`, `ledger_unavailable`, `invalid_json`, …). */
  readonly code: string;
  constructor(code: string) {
    super(`work message reported failed: ${code}`);
    this.name = 'WorkMessageRetryError';
    this.code = code;
  }
}

/**
 * Builds an executor handler over a runtime, built on the first invocation and kept for the life of
 * the process (a Lambda sandbox, or local mode). Tests pass a runtime wired to their own tools.
 *
 * @example
 * ```ts
 * const handler = createExecutorHandler(() => buildRuntime(myTools));
 * const { batchItemFailures } = await handler(sqsEvent, context);
 * ```
 */
export function createExecutorHandler(
  runtime: () => Runtime,
  options: ExecutorOptions = {},
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const visibility = options.retryVisibility ?? retryVisibilitySeconds;
  let built: Runtime | undefined;
  return async (event, context) => {
    built ??= runtime();
    await built.refreshTools();
    const { deps, queueTenants, queueSenders } = built;
    logger.addContext(context);
    // Records whose failure is worth retrying soon; a message that can never run keeps the queue's
    // own timing on its way to the DLQ.
    const retrySoon = new Set<string>();
    const recordHandler = async (record: SQSRecord): Promise<void> => {
      const started = Date.now();
      const req = newRequest(deps, record.messageId, () => context.getRemainingTimeInMillis());
      let verdict: Awaited<ReturnType<typeof handleWorkMessage>>;
      try {
        // One consumer span per message, continuing the sender's trace (`traceparent` attribute).
        verdict = await inSpan(
          `process ${queueName(record.eventSourceARN)}`,
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              'messaging.system': 'aws_sqs',
              'messaging.operation.type': 'process',
              'messaging.destination.name': queueName(record.eventSourceARN),
              'messaging.message.id': record.messageId,
            },
            parent: parentFrom(sqsCarrier(record.messageAttributes)),
          },
          async (span) => {
            const out = await handleWorkMessage(
              deps,
              req,
              record.body,
              queueTenants,
              queueSenders && { id: record.attributes?.SenderId, binding: queueSenders },
            );
            if (out.action === 'retry') span.setAttribute('error.type', out.code);
            return out;
          },
        );
      } catch (error) {
        logger.error('work message failed', { message_id: record.messageId, error_class: errorClass(error) });
        throw error;
      }
      // One line per message: identity, verdict and timing; never the body.
      logger.info('work message handled', {
        message_id: record.messageId,
        receive_count: Number(record.attributes?.ApproximateReceiveCount ?? 0),
        action: verdict.action,
        outcome_code: verdict.code,
        duration_ms: Date.now() - started,
      });
      if (verdict.action === 'retry') {
        if (RETRYABLE_CODES.has(verdict.code)) retrySoon.add(record.messageId);
        throw new WorkMessageRetryError(verdict.code);
      }
    };
    try {
      // A processor per invocation: it holds the batch's records, and local mode may invoke the
      // handler while another invocation is still running.
      const response = await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
        context,
        // A batch in which every record failed is still a partial response (all IDs listed), which
        // SQS treats exactly like a thrown error, and the metrics below are still flushed.
        throwOnFullBatchFailure: false,
      });
      await shortenVisibility(deps.queue, event, retrySoon, visibility);
      return response;
    } finally {
      deps.metrics.flush();
    }
  };
}

/** The queue's name, the last part of its ARN. */
function queueName(arn: string | undefined): string {
  return arn?.split(':').pop() || 'work';
}

/** Verdicts that may succeed on the next delivery: the attempt or the ledger failed, not the message. */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  'failed_retryable',
  'ledger_unavailable',
  'internal_error',
]);

/** First wait before a failed message comes back, seconds; doubles with each receive. */
export const RETRY_VISIBILITY_BASE_SECONDS = 10;

/** Longest wait set per failure (the queue's own visibility timeout still applies to a crash). */
export const RETRY_VISIBILITY_MAX_SECONDS = 300;

/** How long a message reported failed stays invisible, by its receive count (1 for the first). */
export function retryVisibilitySeconds(receives: number): number {
  return Math.min(
    RETRY_VISIBILITY_MAX_SECONDS,
    RETRY_VISIBILITY_BASE_SECONDS * 2 ** (Math.max(1, receives) - 1),
  );
}

/** Options of the executor handler. */
export interface ExecutorOptions {
  /** Seconds a failed message stays invisible, by receive count. @default {@link retryVisibilitySeconds} */
  retryVisibility?: (receives: number) => number;
}

/**
 * The queue's visibility timeout is six executor timeouts (the contract, §6), right for a crashed batch and
 * far too long for a retryable failure (a target refused a connection, the ledger was throttled):
 * such a record comes back after 10 s, 20 s, 40 s … (at most 5 minutes) instead.
 * Best effort: if the change fails, the message comes back after the queue's timeout as before.
 */
async function shortenVisibility(
  queue: WorkQueue,
  event: SQSEvent,
  retrySoon: ReadonlySet<string>,
  visibility: (receives: number) => number,
): Promise<void> {
  if (!queue.retryAfter || retrySoon.size === 0) return;
  await Promise.all(
    event.Records.filter((r) => retrySoon.has(r.messageId)).map(async (record) => {
      const receives = Math.max(1, Number(record.attributes?.ApproximateReceiveCount ?? 1));
      try {
        await queue.retryAfter?.(record.receiptHandle, visibility(receives));
      } catch (error) {
        logger.warn('visibility change failed', {
          message_id: record.messageId,
          error_class: errorClass(error),
        });
      }
    }),
  );
}
