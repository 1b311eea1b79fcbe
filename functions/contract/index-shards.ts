import { createHash } from 'node:crypto';

/**
 * How the two sparse GSIs spread their writes. DynamoDB gives one index partition about 1,000 write
 * units per second, and a time-ordered sort key does not split under load, so each index partition
 * key carries a shard: `attention` over the whole deployment, `unresolved` within each tenant. The
 * shard counts come from the throughput a deployment declares (lib/capacity.ts); readers query every
 * shard and merge.
 */

/** Write units per second one index partition takes before DynamoDB throttles it. */
export const PARTITION_WRITE_UNITS = 1_000;
/**
 * Index writes one synchronous first execution makes to its shard of each index: the entry on
 * reserve and its removal on commit (each at most 1 KB, so 1 write unit).
 */
export const INDEX_WRITES_PER_FIRST_EXECUTION = 2;
/** The share of a partition's write units a shard is planned to use: bursts and skew need room. */
export const PLANNED_PARTITION_USE = 0.8;
/** First executions per second one shard of an index carries at the planned use. */
export const FIRST_EXECUTIONS_PER_SHARD =
  (PARTITION_WRITE_UNITS * PLANNED_PARTITION_USE) / INDEX_WRITES_PER_FIRST_EXECUTION;

/**
 * The `unresolved` partition of a record (and its `operations` partition: both indexes spread a tenant
 * over the same shards, so one shard count serves both): the tenant itself for shard 0, `tenant#n` for the others.
 * Shard 0 keeping the bare tenant means raising the shard count never strands existing records (a
 * tenant label cannot contain `#`, so no two tenants' partitions collide).
 */
export function unresolvedPartition(tenant: string, pk: string, shards: number): string {
  const n = shards <= 1 ? 0 : createHash('sha256').update(pk).digest().readUInt32BE(4) % shards;
  return n === 0 ? tenant : `${tenant}#${n}`;
}

/** Every `unresolved` partition of a tenant, shard 0 first. */
export function unresolvedPartitions(tenant: string, shards: number): string[] {
  return Array.from({ length: Math.max(1, shards) }, (_, n) => (n === 0 ? tenant : `${tenant}#${n}`));
}
