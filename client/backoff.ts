import type { RandomSource } from './clock';

/** How retries are spaced. */
export interface BackoffPolicy {
  /** Cap of the first delay, ms. @default 100 */
  baseMs: number;
  /** Largest cap any delay may have, ms. @default 5000 */
  maxMs: number;
}

/** Defaults: 100 ms doubling up to 5 s. */
export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 100, maxMs: 5_000 };

/**
 * Exponential backoff with full jitter: a uniform delay in `[0, min(maxMs, baseMs * 2^retry))`. Full
 * jitter spreads the retries of many agents that failed together (a throttled ledger, a restarted
 * API) instead of sending them back in waves. A server's `Retry-After` is a floor: the client never
 * comes back sooner than it was asked to.
 *
 * @param retry 0 for the first retry.
 * @example
 * ```ts
 * backoffDelay(DEFAULT_BACKOFF, 3, Math.random);           // somewhere in [0, 800)
 * backoffDelay(DEFAULT_BACKOFF, 0, Math.random, 2_000);    // at least 2000
 * ```
 */
export function backoffDelay(
  policy: BackoffPolicy,
  retry: number,
  random: RandomSource,
  retryAfterMs?: number,
): number {
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(retry, 30));
  const jittered = Math.floor(random() * cap);
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * Parses `Retry-After` (delta-seconds or an HTTP date) into milliseconds from `now`. Returns
 * `undefined` for a missing or malformed value, so the jittered backoff applies alone.
 *
 * @example
 * ```ts
 * parseRetryAfter('2', Date.now());                              // 2000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.now());  // 0 (in the past)
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
