import { Stack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { MCP_UPSTREAMS_VARIABLE } from '../functions/mcp/upstreams';
import { COMMIT_RESERVE, type LedgerSettings, ToolLedgerConfigError } from './settings';
import { splitTenants, TENANTS_FILE, TENANTS_FILE_PATH } from './tenant-bindings';

/**
 * The environment each Lambda reads through functions/config.ts. Variable names are the contract with
 * the handlers; local mode reads the same names (SPEC §10).
 */

/** Root of the workspace tools on Lambda: /tmp is the only writable folder (and is per sandbox). */
export const LAMBDA_WORKSPACE_DIR = '/tmp/workspace';

/** CloudWatch namespace the handlers emit EMF metrics into. */
export const METRICS_NAMESPACE = 'ToolLedger';

/** Deployment-specific values only known as CloudFormation references. */
export interface EnvironmentRefs {
  tableName: string;
  queueUrl: string;
}

/** Variables every handler gets. */
export function commonEnvironment(settings: LedgerSettings, refs: EnvironmentRefs): Record<string, string> {
  const owned: Record<string, string> = {
    TOOL_LEDGER_TABLE_NAME: refs.tableName,
    TOOL_LEDGER_QUEUE_URL: refs.queueUrl,
    TOOL_LEDGER_RETENTION_SECONDS: String(settings.retention.toSeconds()),
    TOOL_LEDGER_LEASE_GRACE_MS: String(settings.leaseGrace.toMilliseconds()),
    TOOL_LEDGER_SYNC_WAIT_MS: String(settings.syncWait.toMilliseconds()),
    TOOL_LEDGER_APPROVAL_TTL_SECONDS: String(settings.approvalTtl.toSeconds()),
    TOOL_LEDGER_ALLOW_SELF_APPROVAL: String(settings.allowSelfApproval),
    TOOL_LEDGER_ATTENTION_SHARDS: String(settings.attentionShards),
    TOOL_LEDGER_UNRESOLVED_SHARDS: String(settings.unresolvedShards),
    TOOL_LEDGER_COMMIT_RESERVE_MS: String(COMMIT_RESERVE.toMilliseconds()),
    // A queued record is re-enqueued only once its message had time to be received and fail once: a
    // backlog held back by executorMaxConcurrency is not re-enqueued on every reconciler tick.
    TOOL_LEDGER_QUEUED_STALE_MS: String(settings.visibilityTimeout.toMilliseconds() + 60_000),
    TOOL_LEDGER_WORKSPACE_DIR: settings.workspaceDir,
    TOOL_LEDGER_WEBHOOK_ALLOW: settings.webhookAllow.join(','),
    TOOL_LEDGER_WEBHOOK_IDEMPOTENT: settings.webhookIdempotentOrigins.join(','),
    [MCP_UPSTREAMS_VARIABLE]: settings.mcpUpstreams,
    POWERTOOLS_SERVICE_NAME: settings.serviceName,
    POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    // Bundles ship with source maps; without this flag stack traces point into minified code.
    NODE_OPTIONS: '--enable-source-maps',
  };
  for (const name of Object.keys(settings.environment)) {
    if (
      name in owned ||
      name === 'TOOL_LEDGER_IAM_TENANTS' ||
      name === 'TOOL_LEDGER_IAM_TENANTS_FILE' ||
      name === 'TOOL_LEDGER_QUEUE_TENANTS'
    ) {
      throw new ToolLedgerConfigError([
        `environment sets ${name}, which ToolLedger sets from its props: use the matching prop.`,
      ]);
    }
  }
  return { ...settings.environment, ...owned };
}

/**
 * The API's tenant binding: tenant → role → IAM principal ARNs (SPEC §1: the tenant is derived from
 * the authenticated caller). ARNs known at synth are in the bundled file (lib/tenant-bindings.ts);
 * the variable holds the rest, rendered with `toJsonString` so role ARNs of the same app resolve.
 */
export function apiEnvironment(scope: Construct, settings: LedgerSettings): Record<string, string> {
  const { deployTime } = splitTenants(settings.tenants);
  return {
    TOOL_LEDGER_IAM_TENANTS_FILE: TENANTS_FILE_PATH,
    TOOL_LEDGER_IAM_TENANTS: Stack.of(scope).toJsonString(deployTime),
  };
}

/** Files bundled with the API handler: the synth-time part of the tenant map. */
export function apiBundledFiles(settings: LedgerSettings): Record<string, string> {
  return { [TENANTS_FILE]: JSON.stringify(splitTenants(settings.tenants).bundled) };
}

/** The executor's queue binding (SPEC §6): a message naming another tenant is not run. */
export function executorEnvironment(settings: LedgerSettings): Record<string, string> {
  return { TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(settings.queueTenants) };
}
