import { createHash } from 'node:crypto';
import { OPERATION_SK, TENANT_PATTERN } from './table';

/**
 * The primary key of an operation. The tenant comes first and cannot contain `#`, so two tenants
 * with the same operation ID can never share an item.
 *
 * @example
 * ```ts
 * operationKey('acme', 'run-42'); // { pk: 'acme#run-42', sk: 'op' }
 * ```
 */
export function operationKey(tenant: string, operationId: string): { pk: string; sk: string } {
  if (!TENANT_PATTERN.test(tenant)) throw new Error('invalid tenant label');
  return { pk: `${tenant}#${operationId}`, sk: OPERATION_SK };
}

/**
 * The attention shard of a key: a stable hash spread over `shards` partitions so that no single GSI
 * partition takes every unresolved write.
 */
export function attentionShard(pk: string, shards: number): string {
  const n = createHash('sha256').update(pk).digest().readUInt32BE(0) % shards;
  return `s${n.toString().padStart(3, '0')}`;
}

/** Every shard name for a shard count, in order. */
export function allShards(shards: number): string[] {
  return Array.from({ length: shards }, (_, n) => `s${n.toString().padStart(3, '0')}`);
}
