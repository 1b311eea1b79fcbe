import type { OperationRecord } from '../domain/operation';

/**
 * The `not_after` of every message the ledger sends itself (the contract, §8). A DLQ redrive resets a message's
 * age, so retention on the queues alone cannot stop a message from outliving its record; past its
 * `not_after` the executor acknowledges it without running.
 *
 * The deadline counts from the send, not from the record's creation: the ledger sends only for a
 * record it has just seen unresolved (a reservation, an approval, a reconciler decision, each a
 * conditional write), and an unresolved record never expires, so the record ends no earlier than the
 * send and outlives it by at least its retention. Counting from `created_at` would drop every message
 * for an operation that stayed unresolved longer than its retention (a long approval, a tool down for
 * weeks), and the reconciler would re-enqueue it forever in vain.
 *
 * ```
 *  send ─────────────────────────── retention ──────────────────────────▶ earliest expiry of the record
 *  send ───────────────── retention − margin ──────────▶ not_after
 * ```
 */

/** Kept back from the retention for clock skew between the sender and the executor. */
export const NOT_AFTER_MARGIN_SECONDS = 86_400;

/** The margin for a retention: a day, or a tenth of a shorter retention (local and test settings). */
export function notAfterMarginSeconds(retentionSeconds: number): number {
  return Math.min(NOT_AFTER_MARGIN_SECONDS, Math.floor(retentionSeconds / 10));
}

/**
 * The ISO `not_after` for a message about `record`, sent at `now` (epoch ms).
 *
 * @example
 * ```ts
 * notAfterFor({ retention_seconds: 2_592_000 }, Date.parse('2026-01-01T00:00:00Z')); // '2026-01-30T00:00:00.000Z'
 * ```
 */
export function notAfterFor(record: Pick<OperationRecord, 'retention_seconds'>, now: number): string {
  const seconds = record.retention_seconds - notAfterMarginSeconds(record.retention_seconds);
  return new Date(now + seconds * 1000).toISOString();
}
