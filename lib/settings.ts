import { Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { SETTINGS } from '../functions/contract/environment';
import { API_STAGE } from '../functions/contract/routes';
import { TENANT_PATTERN } from '../functions/contract/table';
import { longestReconcileMs, PASS_TIME_SHARE } from '../functions/contract/time-budget';
import { callerToolRuleProblem, formatCallerTools } from '../functions/domain/caller-tools';
import { TOOL_NAME_PATTERN } from '../functions/domain/tool';
import { formatUpstreams, UpstreamSettingError } from '../functions/mcp/upstreams';
import { entriesReaching } from '../functions/tools/origin-policy';
import { DEFAULT_TOOLS_MODULE, HANDLER_ENTRIES } from './bundling';
import { planShards, type ShardPlan } from './capacity';
import { resolveConcurrency } from './concurrency';
import { ToolLedgerConfigError } from './config-error';
import { checkBinding } from './principal-binding';
import { checkRetention } from './retention-check';
import {
  checkWorkspaceTools,
  SHARED_WORKSPACE_MOUNT,
  type SharedWorkspace,
  WEBHOOK_ONLY_TOOLS_MODULE,
} from './shared-workspace';
import { type ResolvedTenant, splitTenants } from './tenant-bindings';
import type { TenantPrincipals, ToolLedgerProps } from './tool-ledger-props';
import { readToolManifestSync } from './tool-manifest';
import { checkToolSecrets } from './tool-secrets';

export { ToolLedgerConfigError } from './config-error';
export type { ResolvedTenant } from './tenant-bindings';

/**
 * The construct's props with every default applied and every rule of the contract's §§3, 6 and 8 checked, so that a
 * configuration that would deploy but misbehave fails at synth with a sentence that says what to change.
 */

/** API Gateway's default integration timeout for REST APIs. */
const API_GATEWAY_TIMEOUT = Duration.seconds(29);

/** Kept back for the outcome's conditional write: the handlers' own default. */
export const COMMIT_RESERVE = Duration.millis(SETTINGS.commitReserveMs.default);

/** Lambda's environment is 4 KB in all; the tenant map must leave room for the other variables. */
const MAX_TENANTS_JSON = 3_072;

/** A role ARN with its JSON quotes and comma, for sizing ARNs that are still tokens at synth. */
const ESTIMATED_ARN_LENGTH = 80;

/** Everything the construct builds from. */
export interface LedgerSettings {
  tenants: Record<string, ResolvedTenant>;
  queueTenants: string[];
  toolsModule: string;
  /** Every tool the tools module registers, read from the module at synth. */
  toolNames: string[];
  /** The EFS workspace every handler mounts, if any. */
  sharedWorkspace: SharedWorkspace | undefined;
  /** Root of the workspace tools in the handlers (`TOOL_LEDGER_WORKSPACE_DIR`). */
  workspaceDir: string;
  handlerEntries: { api: string; executor: string; reconciler: string; events: string };
  retention: Duration;
  toolRetentions: Record<string, Duration>;
  toolTimeouts: Record<string, Duration>;
  /** The `reconcile` deadline of each tool that has one. */
  toolReconcileTimeouts: Record<string, Duration>;
  queueRetention: Duration;
  deadLetterRetention: Duration;
  maxReceiveCount: number;
  executorTimeout: Duration;
  visibilityTimeout: Duration;
  executorBatchSize: number;
  executorMaxConcurrency: number;
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
  /** `TOOL_LEDGER_MCP_UPSTREAMS` as the handlers read it ('' for none). */
  mcpUpstreams: string;
  /** `TOOL_LEDGER_CALLER_TOOLS` as the API reads it (undefined: any name, nothing forced). */
  callerTools: string | undefined;
  environment: Record<string, string>;
  /** MB of memory per handler. */
  memorySize: { api: number; executor: number; reconciler: number };
  /** Requests per second each tenant may make (`*`: every tenant not named). */
  tenantRateLimits: Record<string, number>;
  /** Reconciler decisions in flight at once. */
  reconcileParallelism: number;
  /** The API stage (the first segment of every path). */
  stageName: string;
  removalPolicy: RemovalPolicy;
  logRetention: RetentionDays;
  tracing: boolean;
  serviceName: string;
  apiThrottling: Throttling;
  reconcileThrottling: Throttling;
  apiCloudWatchRole: boolean;
  apiExecutionLogging: boolean;
  apiDetailedMetrics: boolean;
  webAclArn: string | undefined;
  bundleAwsSdk: boolean;
  unresolvedThreshold: number;
  reconciliationLatencyThreshold: Duration;
  queueAgeThreshold: Duration;
  apiServerErrorRate: number;
  apiLatencyThreshold: Duration;
  deadLetterAgeThreshold: Duration;
  handlerErrorThreshold: number;
  tableThrottleThreshold: number;
}

/** Requests per second and burst (token bucket size) of an API Gateway limit. */
export interface Throttling {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/**
 * The stage-wide default: the declared throughput (requests per second), with a burst of twice that
 * (at most API Gateway's 5,000), so the API carries what the deployment was planned for and no more;
 * the account's 10,000 requests per second are shared by every API. Tenants are limited one by one
 * in the handler (`tenantRateLimits`).
 */
export function stageThrottlingFor(requestsPerSecond: number): Throttling {
  return { rateLimit: requestsPerSecond, burstLimit: Math.min(5_000, 2 * requestsPerSecond) };
}

/** The smallest and largest memory Lambda allows, MB. */
const LAMBDA_MEMORY = { min: 128, max: 10_240 } as const;

/** Default memory of each handler, MB. */
const DEFAULT_MEMORY = 512;

function resolveMemory(
  given: ToolLedgerProps['memorySize'],
  problems: string[],
): LedgerSettings['memorySize'] {
  const each = typeof given === 'number' ? { api: given, executor: given, reconciler: given } : (given ?? {});
  const memory = {
    api: each.api ?? DEFAULT_MEMORY,
    executor: each.executor ?? DEFAULT_MEMORY,
    reconciler: each.reconciler ?? DEFAULT_MEMORY,
  };
  for (const [name, mb] of Object.entries(memory)) {
    if (!isIntIn(mb, LAMBDA_MEMORY.min, LAMBDA_MEMORY.max)) {
      problems.push(
        `memorySize.${name} is ${mb} MB; Lambda allows whole MB from ${LAMBDA_MEMORY.min} to ${LAMBDA_MEMORY.max}.`,
      );
    }
  }
  return memory;
}

/** `POST /v1/reconciliations` runs a whole pass; one a second is plenty for a person at a CLI. */
export const DEFAULT_RECONCILE_THROTTLING: Throttling = { rateLimit: 1, burstLimit: 2 };

/** What only the construct knows (its place in the tree), needed for some defaults. */
export interface SettingsContext {
  /** Default of `serviceName`: unique per instance (see {@link instanceName}). */
  defaultServiceName: string;
}

/** Apply defaults and check every rule; throws {@link ToolLedgerConfigError} listing all problems. */
export function resolveSettings(
  props: ToolLedgerProps,
  context: SettingsContext = { defaultServiceName: 'tool-ledger' },
): LedgerSettings {
  const problems: string[] = [];
  const tenants = resolveTenants(props.tenants ?? {}, problems);
  const executorTimeout = props.executorTimeout ?? Duration.minutes(2);
  const reconcileInterval = props.reconcileInterval ?? Duration.minutes(1);
  const sharedWorkspace = props.sharedWorkspace;
  const workspaceDir = sharedWorkspace ? SHARED_WORKSPACE_MOUNT : SETTINGS.workspaceDir.default;
  // Without a file system the handlers share, only tools whose effects live outside the sandbox fit.
  const toolsModule =
    props.toolsModule ?? (sharedWorkspace ? DEFAULT_TOOLS_MODULE : WEBHOOK_ONLY_TOOLS_MODULE);
  const webhookAllow = [...(props.webhookAllow ?? [])];
  const webhookIdempotentOrigins = [...(props.webhookIdempotentOrigins ?? [])];
  // The construct reads the tools itself (the contract, §8): an app that loads no manifest is checked too.
  const manifest = readToolManifestSync(toolsModule, {
    workspaceRoot: workspaceDir,
    webhookAllow,
    webhookIdempotentOrigins,
    local: false,
  });
  const throughput = planShards(props.declaredThroughput, props.attentionShards, problems);
  const concurrency = resolveConcurrency(props, problems, throughput.firstExecutionsPerSecond);
  if (props.network !== undefined && props.executorNetwork !== undefined) {
    problems.push(
      'network and executorNetwork are both set: use network alone (it covers every function that runs tools: ' +
        'the API, the executor and the reconciler).',
    );
  }
  const settings: LedgerSettings = {
    tenants,
    queueTenants: [...(props.queueTenants ?? Object.keys(tenants))],
    toolsModule,
    toolNames: manifest.names,
    sharedWorkspace,
    workspaceDir,
    handlerEntries: {
      api: props.handlerEntries?.api ?? HANDLER_ENTRIES.api,
      executor: props.handlerEntries?.executor ?? HANDLER_ENTRIES.executor,
      reconciler: props.handlerEntries?.reconciler ?? HANDLER_ENTRIES.reconciler,
      events: props.handlerEntries?.events ?? HANDLER_ENTRIES.events,
    },
    retention: props.retention ?? Duration.days(30),
    toolRetentions: merge(manifest.retentions, props.toolRetentions ?? {}, 'shorter'),
    toolTimeouts: merge(manifest.timeouts, props.toolTimeouts ?? {}, 'longer'),
    toolReconcileTimeouts: merge(manifest.reconcileTimeouts, props.toolReconcileTimeouts ?? {}, 'longer'),
    queueRetention: props.queueRetention ?? Duration.days(4),
    deadLetterRetention: props.deadLetterRetention ?? Duration.days(14),
    maxReceiveCount: props.maxReceiveCount ?? 5,
    executorTimeout,
    visibilityTimeout: Duration.seconds(executorTimeout.toSeconds() * 6),
    executorBatchSize: props.executorBatchSize ?? 5,
    executorMaxConcurrency: concurrency.executorMaxConcurrency,
    reservedConcurrency: concurrency.reserved,
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
    webhookAllow,
    webhookIdempotentOrigins,
    mcpUpstreams: resolveMcpUpstreams(props, problems),
    callerTools: resolveCallerTools(props, tenants, problems),
    environment: { ...props.environment },
    memorySize: resolveMemory(props.memorySize, problems),
    tenantRateLimits: { '*': throughput.perTenant, ...props.tenantRateLimits },
    reconcileParallelism: props.reconcileParallelism ?? SETTINGS.reconcileParallelism.default,
    stageName: props.stageName ?? API_STAGE,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    logRetention: props.logRetention ?? RetentionDays.THREE_MONTHS,
    tracing: props.tracing ?? false,
    serviceName: props.serviceName ?? context.defaultServiceName,
    apiThrottling: props.apiThrottling ?? stageThrottlingFor(throughput.firstExecutionsPerSecond),
    reconcileThrottling: props.reconcileThrottling ?? DEFAULT_RECONCILE_THROTTLING,
    apiCloudWatchRole: props.apiCloudWatchRole ?? true,
    apiExecutionLogging: props.apiExecutionLogging ?? props.apiCloudWatchRole ?? true,
    apiDetailedMetrics: props.apiDetailedMetrics ?? false,
    webAclArn: props.webAclArn,
    bundleAwsSdk: props.bundleAwsSdk ?? false,
    unresolvedThreshold: props.alarmThresholds?.unresolvedOperations ?? 50,
    reconciliationLatencyThreshold: props.alarmThresholds?.reconciliationLatency ?? Duration.minutes(10),
    queueAgeThreshold: props.alarmThresholds?.queueAge ?? Duration.minutes(15),
    apiServerErrorRate: props.alarmThresholds?.apiServerErrorRate ?? 0.05,
    apiLatencyThreshold: props.alarmThresholds?.apiLatencyP99 ?? Duration.seconds(20),
    // Half the DLQ's retention: someone looks at a dead letter well before SQS deletes the evidence.
    deadLetterAgeThreshold:
      props.alarmThresholds?.deadLetterAge ??
      Duration.seconds(Math.floor((props.deadLetterRetention ?? Duration.days(14)).toSeconds() / 2)),
    handlerErrorThreshold: props.alarmThresholds?.handlerErrors ?? 1,
    tableThrottleThreshold: props.alarmThresholds?.tableThrottles ?? 1,
  };
  checkQueues(settings, problems);
  checkApi(settings, problems);
  checkTimes(settings, problems);
  checkTools(settings, problems);
  checkReconcileFits(settings, problems);
  checkAllowReachesNoUpstream(props, problems);
  for (const refused of manifest.refused) problems.push(`toolsModule: ${refused}.`);
  problems.push(...checkWorkspaceTools(settings.toolNames, sharedWorkspace !== undefined));
  problems.push(...checkToolSecrets(props.toolSecrets ?? {}));
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
  if ((props.queue === undefined) !== (props.deadLetterQueue === undefined)) {
    problems.push(
      'queue and deadLetterQueue go together: bring both (the work queue redriving to the DLQ), or neither.',
    );
  }
  if (problems.length > 0) throw new ToolLedgerConfigError(problems);
  return settings;
}

/**
 * The caller-tool rules in the API's format, each checked as the API checks its setting, and each
 * tenant named one of `tenants` (a rule for a tenant nobody is bound to is a typo that would leave the
 * intended tenant refused).
 */
function resolveCallerTools(
  props: ToolLedgerProps,
  tenants: Record<string, ResolvedTenant>,
  problems: string[],
): string | undefined {
  const rules = props.callerTools;
  if (rules === undefined) return undefined;
  if (rules.length === 0) {
    problems.push(
      'callerTools is empty, which would allow every name: leave it out to allow any name, or list the patterns to allow.',
    );
    return undefined;
  }
  const resolved = rules.map((rule, index) => {
    const out = {
      pattern: rule.pattern,
      requiresApproval: rule.requiresApproval ?? false,
      ...(rule.tenant === undefined ? {} : { tenant: rule.tenant }),
      ...(rule.maxAttempts === undefined ? {} : { maxAttempts: rule.maxAttempts }),
    };
    const problem = callerToolRuleProblem(out);
    if (problem !== undefined) problems.push(`callerTools[${index}] (${rule.pattern}): ${problem}.`);
    if (rule.tenant !== undefined && !(rule.tenant in tenants)) {
      problems.push(
        `callerTools[${index}] names tenant "${rule.tenant}", which is not in tenants: add it to tenants or fix the name.`,
      );
    }
    return out;
  });
  return formatCallerTools(resolved);
}

/** The gateway's upstreams in the handlers' format; https only, since they are called from Lambda over the internet. */
function resolveMcpUpstreams(props: ToolLedgerProps, problems: string[]): string {
  const upstreams = props.mcpUpstreams ?? [];
  for (const upstream of upstreams) {
    if (Token.isUnresolved(upstream.url)) {
      problems.push(`mcpUpstreams "${upstream.name}" must name its URL as a literal string, not a token.`);
      return '';
    }
    if (!upstream.url.startsWith('https://')) {
      problems.push(`mcpUpstreams "${upstream.name}" must use an https:// URL.`);
    }
  }
  try {
    return formatUpstreams(
      upstreams.map((u) => ({
        name: u.name,
        url: u.url,
        trusted: u.trusted ?? false,
        ...(u.timeout === undefined ? {} : { timeoutMs: u.timeout.toMilliseconds() }),
      })),
    );
  } catch (error) {
    if (!(error instanceof UpstreamSettingError)) throw error;
    problems.push(`mcpUpstreams: ${error.message.replace(`${SETTINGS.mcpUpstreams.name} `, '')}.`);
    return '';
  }
}

/**
 * The gateway's upstreams are the deployment's own endpoints, which no tool may reach (the handlers
 * refuse them whatever the list says): a `webhookAllow` entry that names one is a contradiction.
 */
function checkAllowReachesNoUpstream(props: ToolLedgerProps, problems: string[]): void {
  const allow = props.webhookAllow ?? [];
  const upstreams = (props.mcpUpstreams ?? []).filter((u) => !Token.isUnresolved(u.url));
  if (allow.some((entry) => Token.isUnresolved(entry))) return;
  let reaching: ReturnType<typeof entriesReaching>;
  try {
    reaching = entriesReaching(
      allow,
      upstreams.map((u) => u.url),
      { local: false },
    );
  } catch {
    return; // a malformed entry or URL is reported where it is checked
  }
  for (const { entry, endpoint } of reaching) {
    problems.push(
      `webhookAllow entry ${entry + 1} (${allow[entry]}) reaches mcpUpstreams "${upstreams[endpoint]?.name}": ` +
        "tools must never reach the gateway's own upstream MCP servers (webhook.post would call their tools " +
        'without the ledger); remove the entry.',
    );
  }
}

function resolveTenants(
  input: Readonly<Record<string, TenantPrincipals>>,
  problems: string[],
): Record<string, ResolvedTenant> {
  const tenants: Record<string, ResolvedTenant> = {};
  const owner = new Map<string, { tenant: string; arn: string }>();
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
      const check = checkBinding(tenant, arn);
      if (!check.ok) {
        problems.push(check.problem);
        continue;
      }
      // Compared as the handler compares callers: `role/teams/x` and `role/x` are one role.
      const previous = owner.get(check.canonical);
      if (previous !== undefined && previous.tenant !== tenant) {
        const same = previous.arn === arn ? `"${arn}"` : `"${previous.arn}" and "${arn}" (one role)`;
        problems.push(
          `${same} is bound to tenants "${previous.tenant}" and "${tenant}": the API derives the tenant ` +
            'from the principal, so a principal belongs to exactly one tenant; use one role per tenant.',
        );
      }
      owner.set(check.canonical, { tenant, arn });
    }
    tenants[tenant] = resolved;
  }
  // Only ARNs resolved at deploy time travel in the environment; the rest is bundled with the code.
  const deployTime = splitTenants(tenants).deployTime;
  const count = Object.values(deployTime).reduce(
    (sum, t) => sum + t.agents.length + t.approvers.length + t.operators.length,
    0,
  );
  if (count * ESTIMATED_ARN_LENGTH > MAX_TENANTS_JSON) {
    problems.push(
      `${count} principal ARNs of the tenant map are resolved at deploy time (roles of this app), about ` +
        `${count * ESTIMATED_ARN_LENGTH} characters, more than ${MAX_TENANTS_JSON} of Lambda's 4 KB environment: ` +
        'write those ARNs out (they are then bundled with the code), or bind fewer roles.',
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
  if (!isIntIn(settings.attentionShards, 1, 1000)) {
    problems.push(`attentionShards is ${settings.attentionShards}; use an integer from 1 to 1000.`);
  }
}

function checkApi(settings: LedgerSettings, problems: string[]): void {
  for (const [name, limit] of [
    ['apiThrottling', settings.apiThrottling],
    ['reconcileThrottling', settings.reconcileThrottling],
  ] as const) {
    if (!(limit.rateLimit > 0) || !isIntIn(limit.burstLimit, 1, 5000)) {
      problems.push(
        `${name} is ${limit.rateLimit}/s with a burst of ${limit.burstLimit}; use a rate above 0 and a ` +
          'whole burst from 1 to 5000.',
      );
    }
  }
  for (const [tenant, limit] of Object.entries(settings.tenantRateLimits)) {
    if (!isIntIn(limit, 1, 100_000)) {
      problems.push(
        `tenantRateLimits.${tenant} is ${limit}; use whole requests per second from 1 (the declared ` +
          'throughput per tenant is the default).',
      );
    }
    if (tenant !== '*' && !(tenant in settings.tenants)) {
      problems.push(
        `tenantRateLimits names "${tenant}", which is not in tenants: add it to tenants or remove it.`,
      );
    }
  }
  if (!isIntIn(settings.reconcileParallelism, 1, 1000)) {
    problems.push(
      `reconcileParallelism is ${settings.reconcileParallelism}; use a whole number from 1 to 1000.`,
    );
  }
  if (!/^[A-Za-z0-9_]{1,128}$/.test(settings.stageName)) {
    problems.push(
      `stageName "${settings.stageName}" is not a stage name: use letters, digits and _ (e.g. prod).`,
    );
  }
  if (settings.reconcileThrottling.rateLimit > settings.apiThrottling.rateLimit) {
    problems.push('reconcileThrottling allows more than apiThrottling; the stage limit would apply anyway.');
  }
  if (!(settings.apiServerErrorRate > 0 && settings.apiServerErrorRate <= 1)) {
    problems.push(
      `alarmThresholds.apiServerErrorRate is ${settings.apiServerErrorRate}; use a fraction above 0, at most 1.`,
    );
  }
  for (const [name, value] of [
    ['handlerErrors', settings.handlerErrorThreshold],
    ['tableThrottles', settings.tableThrottleThreshold],
  ] as const) {
    if (!isIntIn(value, 1, 1_000_000)) {
      problems.push(`alarmThresholds.${name} is ${value}; use a whole number of events, at least 1.`);
    }
  }
  if (settings.deadLetterAgeThreshold.toSeconds() >= settings.deadLetterRetention.toSeconds()) {
    problems.push(
      'alarmThresholds.deadLetterAge is not below deadLetterRetention: SQS would delete the message before ' +
        'the alarm fires.',
    );
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
  for (const name of [
    ...Object.keys(settings.toolRetentions),
    ...Object.keys(settings.toolTimeouts),
    ...Object.keys(settings.toolReconcileTimeouts),
  ]) {
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

/**
 * The contract's §7: a pass never stalls, so it starts a check only if the check can end within the
 * pass (functions/contract/time-budget.ts); a check that can never fit would be handed to an operator
 * every time. Each tool's `reconcile` deadline must fit a scheduled pass and an operator's pass.
 */
function checkReconcileFits(settings: LedgerSettings, problems: string[]): void {
  const reserve = COMMIT_RESERVE.toMilliseconds();
  const share = `${PASS_TIME_SHARE * 100}%`;
  const around = `with ${COMMIT_RESERVE.toSeconds()} s for its commit and ${COMMIT_RESERVE.toSeconds()} s to end the pass`;
  const scheduled = longestReconcileMs(settings.reconcilerTimeout.toMilliseconds(), reserve);
  const onRequest = longestReconcileMs(settings.apiTimeout.toMilliseconds(), reserve);
  for (const [tool, timeout] of Object.entries(settings.toolReconcileTimeouts)) {
    const ms = timeout.toMilliseconds();
    const what = `tool "${tool}" may spend ${ms} ms in one reconcile call (its reconcileTimeoutMs, else its timeoutMs), but`;
    if (ms > scheduled) {
      // The whole minutes whose pass fits it: share × interval − 2 reserves ≥ ms.
      const neededMs = ms + 2 * reserve;
      let minutes = Math.ceil(neededMs / PASS_TIME_SHARE / 60_000);
      while (longestReconcileMs(minutes * 60_000, reserve) < ms) minutes += 1;
      const raise = minutes <= 15 ? `, or raise reconcileInterval to at least ${minutes} minutes` : '';
      problems.push(
        `${what} a scheduled reconciler pass starts a check only if it can end within ${share} of the ` +
          `reconciler's ${settings.reconcilerTimeout.toSeconds()} s timeout (reconcileInterval), ${around}, so at ` +
          `most ${scheduled} ms: set the tool's reconcileTimeoutMs to at most ${scheduled}${raise}.`,
      );
    }
    if (ms > onRequest) {
      problems.push(
        `${what} POST /v1/reconciliations runs an operator's pass inside the API's ${settings.apiTimeout.toSeconds()} s ` +
          `and starts a check only if it can end within ${share} of it, ${around}, so at most ${onRequest} ms: ` +
          `set the tool's reconcileTimeoutMs to at most ${onRequest}.`,
      );
    }
  }
}

/**
 * Per-tool durations from the module and from props, keeping the stricter of the two: a prop can make
 * a check stricter, never hide what the code says.
 */
function merge(
  fromModule: Readonly<Record<string, Duration>>,
  fromProps: Readonly<Record<string, Duration>>,
  keep: 'shorter' | 'longer',
): Record<string, Duration> {
  const merged: Record<string, Duration> = { ...fromModule };
  for (const [tool, duration] of Object.entries(fromProps)) {
    const known = merged[tool];
    const shorter = known === undefined || duration.toMilliseconds() < known.toMilliseconds();
    if (known === undefined || shorter === (keep === 'shorter')) merged[tool] = duration;
  }
  return merged;
}

function isIntIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
