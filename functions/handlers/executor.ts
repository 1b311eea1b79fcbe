import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import tools from '#tool-ledger/tools';
import { errorClass } from '../domain/errors';
import { handleWorkMessage } from '../engine/handle-work-message';
import { newRequest } from '../engine/ledger-deps';
import { logger } from '../observability/logger';
import { buildRuntime, type Runtime } from '../wiring';

/**
 * The SQS executor (SPEC §6): a thin adapter from an SQS batch to {@link handleWorkMessage}. Each record
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
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  let built: Runtime | undefined;
  return async (event, context) => {
    built ??= runtime();
    await built.refreshTools();
    const { deps, queueTenants } = built;
    const recordHandler = async (record: SQSRecord): Promise<void> => {
      const started = Date.now();
      const req = newRequest(deps, record.messageId, () => context.getRemainingTimeInMillis());
      let verdict: Awaited<ReturnType<typeof handleWorkMessage>>;
      try {
        verdict = await handleWorkMessage(deps, req, record.body, queueTenants);
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
      if (verdict.action === 'retry') throw new WorkMessageRetryError(verdict.code);
    };
    try {
      // A processor per invocation: it holds the batch's records, and local mode may invoke the
      // handler while another invocation is still running.
      return await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), {
        context,
        // A batch in which every record failed is still a partial response (all IDs listed), which
        // SQS treats exactly like a thrown error, and the metrics below are still flushed.
        throwOnFullBatchFailure: false,
      });
    } finally {
      deps.metrics.flush();
    }
  };
}

/**
 * The Lambda entry point: the deployment's tools module (`#tool-ledger/tools`, the shipped tools unless
 * the construct aliases another), wired from the environment (functions/wiring.ts).
 */
export const handler = createExecutorHandler(() => buildRuntime(tools));
