import type { Context, ScheduledEvent } from 'aws-lambda';
import { passHoldBackMs } from '../contract/time-budget';
import { errorClass } from '../domain/errors';
import { newRequest } from '../engine/ledger-deps';
import { recordOpenOperations } from '../engine/open-operations-gauge';
import { passLogFields, type ReconcileSummary, reconcilePass } from '../engine/reconcile';
import { logger } from '../observability/logger';
import type { Runtime } from '../wiring';

/**
 * The scheduled reconciler's front door (the contract, §7): one {@link reconcilePass} per invocation (EventBridge in AWS, a
 * timer in local mode). Overlapping invocations are safe: every decision is a conditional write.
 */

/**
 * Builds a reconciler handler over a runtime, built on the first invocation and kept for the life of
 * the process. Tests pass a runtime wired to their own tools.
 *
 * @example
 * ```ts
 * const handler = createReconcilerHandler(() => buildRuntime(myTools));
 * const summary = await handler(scheduledEvent, context);
 * console.log(summary.actions);
 * ```
 */
export function createReconcilerHandler(
  runtime: () => Runtime,
): (event: ScheduledEvent | Record<string, never>, context: Context) => Promise<ReconcileSummary> {
  let built: Runtime | undefined;
  // Where the next pass starts: a pass cut short by its time budget resumes there, so the shards it
  // did not reach are first in line next time instead of last again.
  let nextShard = 0;
  return async (_event, context) => {
    // The invocation's whole time, read before anything else spends it.
    const invocationMs = context.getRemainingTimeInMillis();
    built ??= runtime();
    await built.refreshTools();
    const { deps } = built;
    logger.addContext(context);
    const started = Date.now();
    try {
      const summary = await reconcilePass(
        deps,
        newRequest(deps, context.awsRequestId, () => context.getRemainingTimeInMillis()),
        // The pass ends within its share of the invocation, so a pass kept busy by a backlog is told
        // apart from a handler about to time out (the near-timeout alarm's share is above it).
        {
          startShard: nextShard,
          holdBackMs: passHoldBackMs(invocationMs),
          invocationMs,
        },
      );
      nextShard = summary.nextShard;
      // Counts only: no operation IDs, arguments or results. An idle pass is logged at debug level, so
      // a quiet ledger does not fill the log with a line per tick.
      const log =
        summary.read === 0 && summary.complete ? logger.debug.bind(logger) : logger.info.bind(logger);
      log('reconcile pass', passLogFields(summary, started));
      return summary;
    } catch (error) {
      logger.error('reconcile pass failed', {
        error_class: errorClass(error),
        duration_ms: Date.now() - started,
      });
      throw error;
    } finally {
      // The stock gauges alarms read; a failed count leaves them unset (the alarm keeps its state).
      await recordOpenOperations(deps).catch((error: unknown) => {
        logger.error('open operations count failed', { error_class: errorClass(error) });
      });
      // Also what a pass recorded before it failed (an empty flush writes nothing).
      deps.metrics.flush();
    }
  };
}
