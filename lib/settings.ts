import { Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DEFAULT_TOOLS_MODULE, HANDLER_ENTRIES } from './bundling';
import { planShards, type ShardPlan } from './capacity';
import { checkRetention } from './retention-check';
import type { TenantPrincipals, ToolLedgerProps } from './tool-ledger';

/**
 * The construct's props with every default applied and every rule of SPEC §§3, 6, 8 checked, so that a
 * configuration that would deploy but misbehave fails at synth with a sentence that says what to change.
 */

/** Thrown at synth time for a configuration that must not deploy; the message lists every problem. */
export class ToolLedgerConfigError extends Error {
  /** Each problem as one sentence. */
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`ToolLedger configuration is not safe to deploy:\n- ${problems.join('\n- ')}`);
    this.name = 'ToolLedgerConfigError';
    this.problems = problems;
  }
}

/** Tenant labels: the alphabet functions/ledger/keys.ts accepts (no `#`, which separates key parts). */
export const TENANT_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Tool names (SPEC §4). */
const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

/** IAM users and roles, and assumed-role sessions (what `requestContext.identity.userArn` holds). */
const PRINCIPAL_ARN_PATTERN =
  /^arn:aws[a-z-]*:(iam::\d{12}:(role|user)\/[\w+=,.@/-]+|sts::\d{12}:assumed-role\/[\w+=,.@-]+\/[\w+=,.@-]+)$/;

/** API Gateway's default integration timeout for REST APIs. */
const API_GATEWAY_TIMEOUT = Duration.seconds(29);

/** Kept back for the outcome's conditional write (`TOOL_LEDGER_COMMIT_RESERVE_MS` default). */
export const COMMIT_RESERVE = Duration.seconds(2);

/** Lambda's environment is 4 KB in all; the tenant map must leave room for the other variables. */
const MAX_TENANTS_JSON = 3_072;

/** A tenant's principals with every role present. */
export interface ResolvedTenant {
  agents: string[];
  approvers: string[];
  operators: string[];
}

/** Everything the construct builds from. */
export interface LedgerSettings {
  tenants: Record<string, ResolvedTenant>;
  queueTenants: string[];
  toolsModule: string;
  handlerEntries: { api: string; executor: string; reconciler: string };
  retention: Duration;
  toolRetentions: Record<string, Duration>;
  toolTimeouts: Record<string, Duration>;
  queueRetention: Duration;
  deadLetterRetention: Duration;
  maxReceiveCount: number;
  executorTimeout: Duration;
  visibilityTimeout: Duration;
  executorBatchSize: number;
  executorMaxConcurrency: number | undefined;
  reservedConcurrency: { api?: number; executor?: number; reconciler?: number };
  apiTimeout: Duration;
  syncWait: Duration;
  leaseGrace: Duration;
  approvalTtl: Duration;
  allowSelfApproval: boolean;
  attentionShards: number;
  /** `unresolved` GSI partitions per tenant, from the declared throughput. */
  unresolvedShards: number;
  /** The throughput the shards are planned for. */
  throughput: ShardPlan;
  reconcileInterval: Duration;
  reconcilerTimeout: Duration;
  webhookAllow: string[];
  webhookIdempotentOrigins: string[];
  environment: Record<string, string>;
  memorySize: number;
  removalPolicy: RemovalPolicy;
  logRetention: RetentionDays;
  tracing: boolean;
  serviceName: string;
  apiThrottling: { rateLimit: number; burstLimit: number } | undefined;
  apiCloudWatchRole: boolean;
  webAclArn: string | undefined;
  bundleAwsSdk: boolean;
  unresolvedThreshold: number;
  reconciliationLatencyThreshold: Duration;
  queueAgeThreshold: Duration;
}

/** Apply defaults and check every rule; throws {@link ToolLedgerConfigError} listing all problems. */
export function resolveSettings(props: ToolLedgerProps): LedgerSettings {
  const problems: string[] = [];
  const tenants = resolveTenants(props.tenants ?? {}, problems);
  const executorTimeout = props.executorTimeout ?? Duration.minutes(2);
  const reconcileInterval = props.reconcileInterval ?? Duration.minutes(1);
  const throughput = planShards(props.declaredThroughput, props.attentionShards, problems);
  const settings: LedgerSettings = {
    tenants,
    queueTenants: [...(props.queueTenants ?? Object.keys(tenants))],
    toolsModule: props.toolsModule ?? DEFAULT_TOOLS_MODULE,
    handlerEntries: {
      api: props.handlerEntries?.api ?? HANDLER_ENTRIES.api,
      executor: props.handlerEntries?.executor ?? HANDLER_ENTRIES.executor,
      reconciler: props.handlerEntries?.reconciler ?? HANDLER_ENTRIES.reconciler,
    },
    retention: props.retention ?? Duration.days(30),
    toolRetentions: { ...props.toolRetentions },
    toolTimeouts: { ...props.toolTimeouts },
    queueRetention: props.queueRetention ?? Duration.days(4),
    deadLetterRetention: props.deadLetterRetention ?? Duration.days(14),
    maxReceiveCount: props.maxReceiveCount ?? 5,
    executorTimeout,
    visibilityTimeout: Duration.seconds(executorTimeout.toSeconds() * 6),
    executorBatchSize: props.executorBatchSize ?? 5,
    executorMaxConcurrency: props.executorMaxConcurrency,
    reservedConcurrency: { ...props.reservedConcurrency },
    apiTimeout: API_GATEWAY_TIMEOUT,
    syncWait: props.syncWait ?? Duration.seconds(25),
    leaseGrace: props.leaseGrace ?? Duration.seconds(5),
    approvalTtl: props.approvalTtl ?? Duration.days(1),
    allowSelfApproval: props.allowSelfApproval ?? false,
    attentionShards: throughput.attentionShards,
    unresolvedShards: throughput.unresolvedShards,
    throughput,
    reconcileInterval,
    // A pass never outlives its tick, so passes rarely overlap (overlap is safe, only wasteful).
    reconcilerTimeout: Duration.seconds(Math.min(reconcileInterval.toSeconds(), 900)),
    webhookAllow: [...(props.webhookAllow ?? [])],
    webhookIdempotentOrigins: [...(props.webhookIdempotentOrigins ?? [])],
    environment: { ...props.environment },
    memorySize: props.memorySize ?? 512,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    logRetention: props.logRetention ?? RetentionDays.THREE_MONTHS,
    tracing: props.tracing ?? false,
    serviceName: props.serviceName ?? 'tool-ledger',
    apiThrottling: props.apiThrottling,
    apiCloudWatchRole: props.apiCloudWatchRole ?? true,
    webAclArn: props.webAclArn,
    bundleAwsSdk: props.bundleAwsSdk ?? false,
    unresolvedThreshold: props.alarmThresholds?.unresolvedOperations ?? 50,
    reconciliationLatencyThreshold: props.alarmThresholds?.reconciliationLatency ?? Duration.minutes(10),
    queueAgeThreshold: props.alarmThresholds?.queueAge ?? Duration.minutes(15),
  };
  checkQueues(settings, problems);
  checkTimes(settings, problems);
  checkTools(settings, problems);
  problems.push(
    ...checkRetention({
      defaultRetention: settings.retention,
      toolRetentions: settings.toolRetentions,
      queueRetention: settings.queueRetention,
      deadLetterRetention: settings.deadLetterRetention,
    }),
  );
  for (const tenant of settings.queueTenants) {
    if (!(tenant in tenants)) {
      problems.push(
        `queueTenants names "${tenant}", which is not in tenants: add it to tenants or remove it.`,
      );
    }
  }
  if (problems.length > 0) throw new ToolLedgerConfigError(problems);
  return settings;
}

function resolveTenants(
  input: Readonly<Record<string, TenantPrincipals>>,
  problems: string[],
): Record<string, ResolvedTenant> {
  const tenants: Record<string, ResolvedTenant> = {};
  const owner = new Map<string, string>();
  for (const [tenant, principals] of Object.entries(input)) {
    if (!TENANT_PATTERN.test(tenant)) {
      problems.push(`tenant "${tenant}" is not a valid label: use 1 to 128 characters of [A-Za-z0-9._:-].`);
    }
    const resolved: ResolvedTenant = {
      agents: [...(principals.agents ?? [])],
      approvers: [...(principals.approvers ?? [])],
      operators: [...(principals.operators ?? [])],
    };
    for (const arn of new Set([...resolved.agents, ...resolved.approvers, ...resolved.operators])) {
      if (!Token.isUnresolved(arn) && !PRINCIPAL_ARN_PATTERN.test(arn)) {
        problems.push(
          `tenant "${tenant}" lists "${arn}", which is not an IAM role, user or assumed-role ARN ` +
            '(arn:aws:iam::<account>:role/<name>, ...:user/<name>, arn:aws:sts::<account>:assumed-role/<role>/<session>).',
        );
      }
      const previous = owner.get(arn);
      if (previous !== undefined && previous !== tenant) {
        problems.push(
          `"${arn}" is bound to tenants "${previous}" and "${tenant}": the API derives the tenant from the ` +
            'principal, so a principal belongs to exactly one tenant; use one role per tenant.',
        );
      }
      owner.set(arn, tenant);
    }
    tenants[tenant] = resolved;
  }
  const json = JSON.stringify(tenants);
  if (!Token.isUnresolved(json) && json.length > MAX_TENANTS_JSON) {
    problems.push(
      `the tenant map is ${json.length} characters of JSON, more than ${MAX_TENANTS_JSON} of Lambda's 4 KB ` +
        'environment: bind roles rather than individual users, or split tenants across deployments.',
    );
  }
  return tenants;
}

function checkQueues(settings: LedgerSettings, problems: string[]): void {
  for (const [name, retention] of [
    ['queueRetention', settings.queueRetention],
    ['deadLetterRetention', settings.deadLetterRetention],
  ] as const) {
    const seconds = retention.toSeconds();
    if (seconds < 60 || seconds > 1_209_600) {
      problems.push(`${name} is ${seconds} seconds; SQS allows 60 seconds to 14 days.`);
    }
  }
  if (!isIntIn(settings.maxReceiveCount, 1, 1000)) {
    problems.push(`maxReceiveCount is ${settings.maxReceiveCount}; use an integer from 1 to 1000 (about 5).`);
  }
  if (!isIntIn(settings.executorBatchSize, 1, 10)) {
    problems.push(`executorBatchSize is ${settings.executorBatchSize}; use an integer from 1 to 10.`);
  }
  const max = settings.executorMaxConcurrency;
  if (max !== undefined && !isIntIn(max, 2, 1000)) {
    problems.push(`executorMaxConcurrency is ${max}; SQS event sources allow 2 to 1000.`);
  }
  if (!isIntIn(settings.attentionShards, 1, 1000)) {
    problems.push(`attentionShards is ${settings.attentionShards}; use an integer from 1 to 1000.`);
  }
}

function checkTimes(settings: LedgerSettings, problems: string[]): void {
  const executor = settings.executorTimeout.toSeconds();
  if (executor < 10 || executor > 900) {
    problems.push(
      `executorTimeout is ${executor} seconds; Lambda allows up to 15 minutes, and below 10 seconds no tool fits.`,
    );
  }
  const syncBudget = settings.apiTimeout.toMilliseconds() - COMMIT_RESERVE.toMilliseconds();
  if (settings.syncWait.toMilliseconds() > syncBudget) {
    problems.push(
      `syncWait is ${settings.syncWait.toMilliseconds()} ms, but API Gateway answers after ` +
        `${settings.apiTimeout.toSeconds()} s and the commit needs ${COMMIT_RESERVE.toSeconds()} s: ` +
        `use at most ${syncBudget} ms (longer tools run asynchronously anyway).`,
    );
  }
  const interval = settings.reconcileInterval.toSeconds();
  if (interval < 60 || interval % 60 !== 0) {
    problems.push(
      `reconcileInterval is ${interval} seconds; EventBridge schedules whole minutes, at least 1.`,
    );
  }
  if (!Number.isInteger(settings.retention.toSeconds())) {
    problems.push('retention must be whole seconds.');
  }
}

function checkTools(settings: LedgerSettings, problems: string[]): void {
  const budget = settings.executorTimeout.toMilliseconds() - COMMIT_RESERVE.toMilliseconds();
  for (const name of [...Object.keys(settings.toolRetentions), ...Object.keys(settings.toolTimeouts)]) {
    if (!TOOL_NAME_PATTERN.test(name)) {
      problems.push(`"${name}" is not a tool name ([a-z][a-z0-9_.-]{0,63}).`);
    }
  }
  for (const [tool, timeout] of Object.entries(settings.toolTimeouts)) {
    if (timeout.toMilliseconds() > budget) {
      problems.push(
        `tool "${tool}" may run ${timeout.toMilliseconds()} ms, but the executor Lambda stops after ` +
          `${settings.executorTimeout.toSeconds()} s including ${COMMIT_RESERVE.toSeconds()} s for the ` +
          `commit: raise executorTimeout to at least ${Math.ceil((timeout.toMilliseconds() + COMMIT_RESERVE.toMilliseconds()) / 1000)} s or lower the tool's timeoutMs.`,
      );
    }
  }
}

function isIntIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
