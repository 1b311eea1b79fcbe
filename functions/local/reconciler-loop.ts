import type { Context, ScheduledEvent } from 'aws-lambda';
import { errorClass } from '../domain/errors';
import { logger } from '../observability/logger';
import { invoke, type LocalFunction } from './lambda-context';

/**
 * What the EventBridge schedule does, on one machine: invoke the reconciler handler every
 * `everyMs`. The next pass is timed from the end of the previous one, so passes never overlap locally
 * (overlap would be safe, every decision being a conditional write, but it is wasted work).
 */

/** The reconciler handler's signature (functions/handlers/reconciler.ts). */
export type ReconcilerHandler = (event: ScheduledEvent, context: Context) => Promise<unknown>;

/**
 * A timer that invokes the reconciler.
 *
 * @example
 * ```ts
 * const loop = new ReconcilerLoop(handler, { name: 'reconciler', timeoutMs: 60_000 }, 5_000);
 * loop.start();
 * await loop.stop(10_000);
 * ```
 */
export class ReconcilerLoop {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly handler: ReconcilerHandler,
    private readonly fn: LocalFunction,
    private readonly everyMs: number,
  ) {}

  /** Schedules the first pass one interval from now. */
  start(): void {
    if (!this.stopping && this.timer === undefined && this.pass === undefined) this.schedule();
  }

  /** Cancels the next pass and waits for the running one, at most `graceMs`. */
  async stop(graceMs: number): Promise<boolean> {
    this.stopping = true;
    clearTimeout(this.timer);
    const running = this.pass;
    if (!running) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      running.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    return drained;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pass = this.runOnce().finally(() => {
        this.pass = undefined;
        if (!this.stopping) this.schedule();
      });
    }, this.everyMs);
  }

  private async runOnce(): Promise<void> {
    try {
      await invoke(this.fn, this.handler, scheduledEvent());
    } catch (error) {
      // The handler logs its own failures; this line covers the timeout, which it cannot see.
      logger.error('reconciler invocation failed', { error_class: errorClass(error) });
    }
  }
}

function scheduledEvent(): ScheduledEvent {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: ['arn:aws:events:us-east-1:000000000000:rule/tool-ledger-reconcile'],
    detail: {},
  };
}
