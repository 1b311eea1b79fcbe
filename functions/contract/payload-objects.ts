import { createHash } from 'node:crypto';
import { TENANT_PATTERN } from './table';

/**
 * How results kept in the object store are named: one module states it, so the engine that writes
 * them, the construct that grants and expires them, and local mode agree.
 */

/** Prefix of every result object: the construct's grants and lifecycle rule name it. */
export const RESULT_OBJECTS_PREFIX = 'results/';

/**
 * The object key of one attempt's result: the tenant, a digest of the operation's key (operation IDs
 * may hold any printable ASCII and be 255 characters long; S3 keys are limited to 1024 bytes), the
 * reservation (a new operation that reuses an expired key never meets an older one's objects), the
 * attempt, and the SHA-256 of the JSON text. Deterministic: the same attempt writing the same result
 * writes the same object again, and an object written for an attempt that never committed (an orphan)
 * can never replace the object a committed record names.
 *
 * @example
 * ```ts
 * resultObjectKey({ tenant: 'acme', operation_id: 'run-42', reservation_id: 'r-1', attempt: 1 }, sha);
 * // 'results/acme/3f1c…/r-1/1-<sha>.json'
 * ```
 */
export function resultObjectKey(
  record: { tenant: string; operation_id: string; reservation_id: string; attempt: number },
  sha256: string,
): string {
  if (!TENANT_PATTERN.test(record.tenant)) throw new Error('invalid tenant label');
  const operation = createHash('sha256')
    .update(`${record.tenant}#${record.operation_id}`, 'utf8')
    .digest('hex')
    .slice(0, 32);
  const reservation = encodeURIComponent(record.reservation_id);
  return `${RESULT_OBJECTS_PREFIX}${record.tenant}/${operation}/${reservation}/${record.attempt}-${sha256}.json`;
}
