import { readSetting, SETTINGS, SettingError } from './contract/environment';
import { type CallerToolRule, CallerToolsError, parseCallerTools } from './domain/caller-tools';

/**
 * Settings of a deployment or a local run, read once from the environment (the contract, §10). Lambda and local
 * mode read the same variables; the CDK construct sets them from its props.
 */

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
  /** Reconciler decisions in flight at once. */
  reconcileParallelism: number;
  /**
   * Which caller tool names each tenant may declare, and the policy forced on them (the contract,
   * §14); undefined: any name, nothing forced.
   */
  callerTools?: CallerToolRule[] | undefined;
}

/**
 * Read a config from an environment (default: `process.env`); a variable that cannot be used throws
 * `SettingError` naming it. Names, defaults and parsing are the contract's
 * (functions/contract/environment.ts).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): LedgerConfig {
  return {
    tableName: readSetting(env, SETTINGS.tableName),
    queueUrl: readSetting(env, SETTINGS.queueUrl),
    retentionSeconds: readSetting(env, SETTINGS.retentionSeconds),
    leaseGraceMs: readSetting(env, SETTINGS.leaseGraceMs),
    syncWaitMs: readSetting(env, SETTINGS.syncWaitMs),
    approvalTtlSeconds: readSetting(env, SETTINGS.approvalTtlSeconds),
    allowSelfApproval: readSetting(env, SETTINGS.allowSelfApproval),
    attentionShards: readSetting(env, SETTINGS.attentionShards),
    unresolvedShards: readSetting(env, SETTINGS.unresolvedShards),
    queuedStaleMs: readSetting(env, SETTINGS.queuedStaleMs),
    retryBaseMs: readSetting(env, SETTINGS.retryBaseMs),
    maxReconcileChecks: readSetting(env, SETTINGS.maxReconcileChecks),
    commitReserveMs: readSetting(env, SETTINGS.commitReserveMs),
    reconcileParallelism: Math.max(1, readSetting(env, SETTINGS.reconcileParallelism)),
    callerTools: readCallerTools(env),
  };
}

/** `TOOL_LEDGER_CALLER_TOOLS`, parsed; a malformed entry is a {@link SettingError} naming it. */
function readCallerTools(env: NodeJS.ProcessEnv): CallerToolRule[] | undefined {
  const name = SETTINGS.callerTools.name;
  try {
    return parseCallerTools(readSetting(env, SETTINGS.callerTools), name);
  } catch (error) {
    if (error instanceof CallerToolsError) throw new SettingError(name, error.message);
    throw error;
  }
}
