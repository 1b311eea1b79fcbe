/**
 * How a handler's time is shared between work and the margin alarms watch, stated once for both sides:
 * the reconciler's passes (functions/engine/reconcile.ts) end within {@link PASS_TIME_SHARE} of the
 * invocation, the near-timeout alarms (lib/monitoring.ts) fire at {@link NEAR_TIMEOUT_SHARE}, and the
 * construct's synth check (lib/settings.ts) refuses a tool whose `reconcile` cannot fit in a pass. A
 * pass that is busy because there is a backlog therefore never looks like a handler about to be cut
 * off: the gap between the two shares is what the alarm means. Pure data and arithmetic.
 */

/** A handler whose slowest invocation reaches this share of its timeout is about to be cut off. */
export const NEAR_TIMEOUT_SHARE = 0.9;

/** A reconciler pass (scheduled or on request) starts no decision it could not end within this share. */
export const PASS_TIME_SHARE = 0.8;

/**
 * The time a pass keeps back at the end of an invocation with `remainingMs` left when it starts, so
 * that it ends at {@link PASS_TIME_SHARE} of it at the latest.
 *
 * @example
 * ```ts
 * passHoldBackMs(60_000); // 12_000: a pass in a 60 s invocation ends by 48 s
 * ```
 */
export function passHoldBackMs(remainingMs: number): number {
  return Math.max(0, remainingMs - Math.floor(remainingMs * PASS_TIME_SHARE));
}

/**
 * The longest `reconcile` deadline a pass in an invocation of `timeoutMs` can still start: the pass's
 * share of the invocation, less the commit after the decision and the reserve for ending the pass.
 *
 * @example
 * ```ts
 * longestReconcileMs(60_000, 2_000); // 44_000
 * ```
 */
export function longestReconcileMs(timeoutMs: number, commitReserveMs: number): number {
  return timeoutMs - passHoldBackMs(timeoutMs) - 2 * commitReserveMs;
}
