import { createHash } from 'node:crypto';

/**
 * The key a tool passes to a target system that deduplicates on its own (the contract, §1), derived from the
 * tenant, the operation ID and the record's `reservation_id` (a unique value written when the record
 * is created). Every attempt of one operation gets the same key; a new operation that reuses an
 * expired operation ID gets a new reservation and so a new key, so a target that dedupes longer than
 * the ledger's retention never swallows it, and per-operation state a tool keeps under the key (the
 * append markers) can never be mistaken for the old operation's.
 *
 * At most 64 characters of `[A-Za-z0-9_-]` (it fits even EC2's ClientToken): `tl2_` + 43 base64url
 * characters of a SHA-256. It is a hash, so it reveals neither the tenant nor the operation ID. The
 * parts are length-prefixed, so no two different triples hash the same input.
 *
 * @example
 * ```ts
 * downstreamKey('acme', 'run-42-step-3', record.reservation_id); // 'tl2_' + 43 base64url characters
 * ```
 */
export function downstreamKey(tenant: string, operationId: string, reservationId: string): string {
  if (reservationId === '') throw new Error('a downstream key needs the reservation of its record');
  const hash = createHash('sha256');
  hash.update('tool-ledger downstream key v2');
  for (const part of [tenant, operationId, reservationId]) {
    hash.update(`\u0000${Buffer.byteLength(part, 'utf8')}:`);
    hash.update(part, 'utf8');
  }
  return `tl2_${hash.digest('base64url')}`;
}
