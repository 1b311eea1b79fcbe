import { createHash } from 'node:crypto';

/** Name of the sparse, sharded GSI the reconciler reads (SPEC §7). */
export const ATTENTION_INDEX = 'attention';
/** Name of the sparse GSI keyed by tenant that serves the operators' listing. */
export const UNRESOLVED_INDEX = 'unresolved';
/** Sort key value of an operation item; other item kinds may share the partition later. */
export const OPERATION_SK = 'op';

/** Tenants are labels from configuration, never from a body: a conservative alphabet keeps keys unambiguous. */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

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
