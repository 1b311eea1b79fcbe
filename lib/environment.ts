import { Stack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { SETTINGS } from '../functions/contract/environment';
import { METRICS_NAMESPACE } from '../functions/contract/metrics';
import { ToolLedgerConfigError } from './config-error';
import { COMMIT_RESERVE, type LedgerSettings } from './settings';
import { splitTenants, TENANTS_FILE, TENANTS_FILE_PATH } from './tenant-bindings';

/**
 * The environment each Lambda reads, by the names the handlers read (functions/contract/environment.ts,
 * which also says which handler reads which variable); local mode sets the same names (the contract, §10).
 */

/** Root of the workspace tools on Lambda: /tmp is the only writable folder (and is per sandbox). */
export const LAMBDA_WORKSPACE_DIR: string = SETTINGS.workspaceDir.default;

/** Deployment-specific values only known as CloudFormation references. */
export interface EnvironmentRefs {
  tableName: string;
  queueUrl: string;
  /** The bucket of whole results (lib/results-bucket.ts). */
  resultsBucket?: string;
  /** The ledger's identity, read back from the table at deploy time (lib/ledger-identity.ts). */
  ledgerId?: string;
}

/** Variables every handler gets. */
export function commonEnvironment(settings: LedgerSettings, refs: EnvironmentRefs): Record<string, string> {
  const owned: Record<string, string> = {
    [SETTINGS.tableName.name]: refs.tableName,
    [SETTINGS.queueUrl.name]: refs.queueUrl,
    ...(refs.ledgerId === undefined ? {} : { [SETTINGS.ledgerId.name]: refs.ledgerId }),
    ...(refs.resultsBucket === undefined ? {} : { [SETTINGS.resultsBucket.name]: refs.resultsBucket }),
    [SETTINGS.retentionSeconds.name]: String(settings.retention.toSeconds()),
    [SETTINGS.leaseGraceMs.name]: String(settings.leaseGrace.toMilliseconds()),
    [SETTINGS.syncWaitMs.name]: String(settings.syncWait.toMilliseconds()),
    [SETTINGS.approvalTtlSeconds.name]: String(settings.approvalTtl.toSeconds()),
    [SETTINGS.allowSelfApproval.name]: String(settings.allowSelfApproval),
    [SETTINGS.attentionShards.name]: String(settings.attentionShards),
    [SETTINGS.unresolvedShards.name]: String(settings.unresolvedShards),
    [SETTINGS.commitReserveMs.name]: String(COMMIT_RESERVE.toMilliseconds()),
    [SETTINGS.reconcileParallelism.name]: String(settings.reconcileParallelism),
    // A queued record is re-enqueued only once its message had time to be received and fail once: a
    // backlog held back by executorMaxConcurrency is not re-enqueued on every reconciler tick.
    [SETTINGS.queuedStaleMs.name]: String(settings.visibilityTimeout.toMilliseconds() + 60_000),
    [SETTINGS.workspaceDir.name]: settings.workspaceDir,
    [SETTINGS.webhookAllow.name]: settings.webhookAllow.join(','),
    [SETTINGS.webhookIdempotent.name]: settings.webhookIdempotentOrigins.join(','),
    [SETTINGS.mcpUpstreams.name]: settings.mcpUpstreams,
    [SETTINGS.serviceName.name]: settings.serviceName,
    [SETTINGS.metricsNamespace.name]: METRICS_NAMESPACE,
    // Bundles ship with source maps; without this flag stack traces point into minified code.
    NODE_OPTIONS: '--enable-source-maps',
  };
  for (const name of Object.keys(settings.environment)) {
    if (
      name in owned ||
      name === SETTINGS.iamTenants.name ||
      name === SETTINGS.iamTenantsFile.name ||
      name === SETTINGS.callerTools.name ||
      name === SETTINGS.queueTenants.name ||
      name === SETTINGS.tenantRateLimits.name ||
      name === SETTINGS.toolSecrets.name
    ) {
      throw new ToolLedgerConfigError([
        `environment sets ${name}, which ToolLedger sets from its props: use the matching prop.`,
      ]);
    }
  }
  return { ...settings.environment, ...owned };
}

/**
 * The API's tenant binding: tenant → role → IAM principal ARNs (the contract, §1: the tenant is derived from
 * the authenticated caller). ARNs known at synth are in the bundled file (lib/tenant-bindings.ts);
 * the variable holds the rest, rendered with `toJsonString` so role ARNs of the same app resolve.
 */
export function apiEnvironment(scope: Construct, settings: LedgerSettings): Record<string, string> {
  const { deployTime } = splitTenants(settings.tenants);
  return {
    [SETTINGS.iamTenantsFile.name]: TENANTS_FILE_PATH,
    [SETTINGS.iamTenants.name]: Stack.of(scope).toJsonString(deployTime),
    [SETTINGS.tenantRateLimits.name]: JSON.stringify(settings.tenantRateLimits),
    // Which caller tool names each tenant may declare (the contract, §14); only the API reads it.
    ...(settings.callerTools === undefined ? {} : { [SETTINGS.callerTools.name]: settings.callerTools }),
  };
}

/** Files bundled with the API handler: the synth-time part of the tenant map. */
export function apiBundledFiles(settings: LedgerSettings): Record<string, string> {
  return { [TENANTS_FILE]: JSON.stringify(splitTenants(settings.tenants).bundled) };
}

/** The executor's queue binding (the contract, §6): a message naming another tenant is not run. */
export function executorEnvironment(settings: LedgerSettings): Record<string, string> {
  return { [SETTINGS.queueTenants.name]: JSON.stringify(settings.queueTenants) };
}
