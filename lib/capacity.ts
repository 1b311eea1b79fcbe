import {
  FIRST_EXECUTIONS_PER_SHARD,
  INDEX_WRITES_PER_FIRST_EXECUTION,
  PARTITION_WRITE_UNITS,
  PLANNED_PARTITION_USE,
} from '../functions/contract/index-shards';

/**
 * The throughput a deployment declares, and the GSI shard counts that carry it. One partition of a
 * DynamoDB index takes about 1,000 write units per second and a synchronous first execution writes
 * its shard of each index twice (entry, removal; 1 unit each, the indexes project keys only), so one
 * shard carries 400 first executions per second at the planned 80 % use. `attention` is shared by the
 * whole deployment; `unresolved` is sharded within each tenant.
 */

/** First executions per second a deployment plans for. */
export interface DeclaredThroughput {
  /** The whole deployment, all tenants together. @default 2000 */
  readonly firstExecutionsPerSecond?: number;
  /** The busiest single tenant. @default 400 */
  readonly perTenant?: number;
}

/** Defaults: what the historical 8 attention shards and one partition per tenant carry. */
export const DEFAULT_THROUGHPUT = { firstExecutionsPerSecond: 2_000, perTenant: 400 } as const;

/** Fewest attention shards: the reconciler's pass reads them all, and 8 is cheap. */
export const MIN_ATTENTION_SHARDS = 8;
/** Most attention shards (the reconciler queries each one per pass). */
export const MAX_ATTENTION_SHARDS = 1_000;
/** Most `unresolved` shards per tenant: every listing page queries each of them. */
export const MAX_UNRESOLVED_SHARDS = 100;

/** Shard counts for a declared throughput. */
export interface ShardPlan {
  firstExecutionsPerSecond: number;
  perTenant: number;
  attentionShards: number;
  unresolvedShards: number;
}

/** Shards of one index that carry `rate` first executions per second. */
export function shardsFor(rate: number): number {
  return Math.max(1, Math.ceil(rate / FIRST_EXECUTIONS_PER_SHARD));
}

/**
 * Plans the shards for a declaration, pushing a problem (with what to set) when the declaration is
 * malformed or more than the shards can carry. An explicit `attentionShards` below what the
 * throughput needs is refused rather than silently raised: the operator asked for it.
 */
export function planShards(
  declared: DeclaredThroughput | undefined,
  attentionShards: number | undefined,
  problems: string[],
): ShardPlan {
  const total = declared?.firstExecutionsPerSecond ?? DEFAULT_THROUGHPUT.firstExecutionsPerSecond;
  const perTenant = declared?.perTenant ?? Math.min(total, DEFAULT_THROUGHPUT.perTenant);
  const plan: ShardPlan = {
    firstExecutionsPerSecond: total,
    perTenant,
    attentionShards: attentionShards ?? Math.max(MIN_ATTENTION_SHARDS, shardsFor(total)),
    unresolvedShards: shardsFor(perTenant),
  };
  const per = `each shard carries ${FIRST_EXECUTIONS_PER_SHARD} first executions per second (${PARTITION_WRITE_UNITS} write units per partition × ${PLANNED_PARTITION_USE * 100} % ÷ ${INDEX_WRITES_PER_FIRST_EXECUTION} index writes)`;
  if (!(Number.isInteger(total) && total >= 1) || !(Number.isInteger(perTenant) && perTenant >= 1)) {
    problems.push(
      `declaredThroughput is ${JSON.stringify({ firstExecutionsPerSecond: total, perTenant })}; use positive integers.`,
    );
    return plan;
  }
  if (perTenant > total) {
    problems.push(
      `declaredThroughput.perTenant (${perTenant}) is above firstExecutionsPerSecond (${total}); set perTenant to at most ${total}.`,
    );
  }
  const neededAttention = shardsFor(total);
  if (neededAttention > MAX_ATTENTION_SHARDS) {
    problems.push(
      `declaredThroughput.firstExecutionsPerSecond ${total} needs ${neededAttention} attention shards; ${per}, and at most ${MAX_ATTENTION_SHARDS} are allowed: declare at most ${MAX_ATTENTION_SHARDS * FIRST_EXECUTIONS_PER_SHARD}, or split the load over more than one deployment.`,
    );
  } else if (attentionShards !== undefined && attentionShards < neededAttention) {
    problems.push(
      `attentionShards is ${attentionShards}, but declaredThroughput.firstExecutionsPerSecond ${total} needs ${neededAttention}; ${per}: set attentionShards to at least ${neededAttention}, or leave it unset to derive it.`,
    );
  }
  if (plan.unresolvedShards > MAX_UNRESOLVED_SHARDS) {
    problems.push(
      `declaredThroughput.perTenant ${perTenant} needs ${plan.unresolvedShards} unresolved shards per tenant; ${per}, and at most ${MAX_UNRESOLVED_SHARDS} are allowed (each listing page reads them all): declare perTenant at most ${MAX_UNRESOLVED_SHARDS * FIRST_EXECUTIONS_PER_SHARD}, or spread the work over more tenants.`,
    );
  }
  return plan;
}
