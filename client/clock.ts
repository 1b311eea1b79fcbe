/**
 * Time as the client sees it: injectable so backoff and deadlines can be tested without waiting.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The real clock: `Date.now()` and a timer.
 *
 * @example
 * ```ts
 * await systemClock.sleep(100);
 * ```
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** A source of uniform numbers in [0, 1); injectable for deterministic jitter. */
export type RandomSource = () => number;
