/**
 * A clock that only moves when the test moves it: `sleep` waits until `advance` passes its end, and
 * every sleep that starts is an event the test can wait for. Heartbeats and backoffs then happen
 * exactly when the test says, however busy the machine is.
 */
export function manualClock(start = Date.UTC(2025, 0, 2, 3, 4, 5)) {
  let now = start;
  let started = 0;
  const sleepers: { until: number; resolve: () => void }[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const wake = () => {
    for (const sleeper of sleepers.filter((s) => s.until <= now)) {
      sleepers.splice(sleepers.indexOf(sleeper), 1);
      sleeper.resolve();
    }
  };
  return {
    now: () => now,
    sleep(ms: number, signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (ms <= 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const sleeper = {
          until: now + ms,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          const index = sleepers.indexOf(sleeper);
          if (index >= 0) sleepers.splice(index, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        sleepers.push(sleeper);
        started++;
        for (const waiter of waiters.filter((w) => started >= w.count)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      });
    },
    /** Moves time forward and wakes every sleep that has ended. */
    advance(ms: number): void {
      now += ms;
      wake();
    },
    /** Resolves once `count` sleeps (of more than 0 ms) have started in all. */
    sleepsStarted(count: number): Promise<void> {
      if (started >= count) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ count, resolve }));
    },
    /** How long the earliest pending sleep has left, ms (undefined when nothing sleeps). */
    nextWake(): number | undefined {
      if (sleepers.length === 0) return undefined;
      return Math.min(...sleepers.map((s) => s.until)) - now;
    },
  };
}

/** A promise with its resolver outside, for "the effect finishes when the test says so". */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
