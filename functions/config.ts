/**
 * Settings of a deployment or a local run, read once from the environment (SPEC §10). Lambda and local
 * mode read the same variables; the CDK construct sets them from its props.
 */

/**
 * Executors that run at once by default: the construct's `executorMaxConcurrency` (and the reserved
 * concurrency it gives the executor), and the executor loops of local mode
 * (`TOOL_LEDGER_EXECUTOR_CONCURRENCY`).
 */
export const DEFAULT_EXECUTOR_CONCURRENCY = 10;

/** Everything the engine needs to know about its deployment. */
export interface LedgerConfig {
  /** DynamoDB table name. */
  tableName: string;
  /** Work queue URL (empty where no queue is wired, e.g. unit tests). */
  queueUrl: string;
  /** Default retention of terminal records, seconds. */
  retentionSeconds: number;
  /** Lease length beyond a worker's hard deadline, ms. */
  leaseGraceMs: number;
  /** How long a synchronous call may run, ms. */
  syncWaitMs: number;
  /** Approval deadline, seconds. */
  approvalTtlSeconds: number;
  /** Let a requester approve its own operation. */
  allowSelfApproval: boolean;
  /** Number of attention GSI shards. */
  attentionShards: number;
  /** Number of `unresolved` GSI partitions per tenant (1 keeps each tenant in one). */
  unresolvedShards: number;
  /** A `queued` record not started after this long is enqueued again, ms. */
  queuedStaleMs: number;
  /** First backoff of retries and of reconcile checks, ms; doubles each time. */
  retryBaseMs: number;
  /** `unknown` reconcile verdicts before `needs_reconciliation`. */
  maxReconcileChecks: number;
  /** Time kept back from the Lambda's remaining time for the commit, ms. */
  commitReserveMs: number;
}

/** Read a config from an environment (default: `process.env`). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): LedgerConfig {
  return {
    tableName: env.TOOL_LEDGER_TABLE_NAME ?? 'tool-ledger',
    queueUrl: env.TOOL_LEDGER_QUEUE_URL ?? '',
    retentionSeconds: int(env, 'TOOL_LEDGER_RETENTION_SECONDS', 2_592_000),
    leaseGraceMs: int(env, 'TOOL_LEDGER_LEASE_GRACE_MS', 5_000),
    syncWaitMs: int(env, 'TOOL_LEDGER_SYNC_WAIT_MS', 25_000),
    approvalTtlSeconds: int(env, 'TOOL_LEDGER_APPROVAL_TTL_SECONDS', 86_400),
    allowSelfApproval: env.TOOL_LEDGER_ALLOW_SELF_APPROVAL === 'true',
    attentionShards: int(env, 'TOOL_LEDGER_ATTENTION_SHARDS', 8),
    unresolvedShards: int(env, 'TOOL_LEDGER_UNRESOLVED_SHARDS', 1),
    queuedStaleMs: int(env, 'TOOL_LEDGER_QUEUED_STALE_MS', 120_000),
    retryBaseMs: int(env, 'TOOL_LEDGER_RETRY_BASE_MS', 2_000),
    maxReconcileChecks: int(env, 'TOOL_LEDGER_MAX_RECONCILE_CHECKS', 5),
    commitReserveMs: int(env, 'TOOL_LEDGER_COMMIT_RESERVE_MS', 2_000),
  };
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer`);
  }
  return value;
}
