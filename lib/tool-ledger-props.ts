import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { ICertificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IVpcEndpoint } from 'aws-cdk-lib/aws-ec2';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStringParameter } from 'aws-cdk-lib/aws-ssm';
import type { DeclaredThroughput } from './capacity';
import type { ReservedConcurrency } from './concurrency';
import type { HandlerNetwork } from './handler-function';
import type { QueueSender } from './queue-senders';
import type { SharedWorkspace } from './shared-workspace';

/*
 * The construct's props, in a module of their own: the construct (lib/tool-ledger.ts) builds from them
 * and the settings (lib/settings.ts) resolve them, and neither needs the other to name them.
 */

/** IAM principals of one tenant, by role. Role ARNs also match the role's assumed-role sessions. */
export interface TenantPrincipals {
  /** May run tool calls (`POST /v1/operations`) and read operations and tools. @default none */
  readonly agents?: readonly string[];
  /** May approve or reject operations that require approval. @default none */
  readonly approvers?: readonly string[];
  /** May list unresolved operations, resolve uncertain ones and run a reconciliation pass. @default none */
  readonly operators?: readonly string[];
}

/** One upstream MCP server of the gateway. */
export interface McpUpstreamProps {
  /** Prefix of its tools' names: `[a-z][a-z0-9_-]{0,31}`, no dots. */
  readonly name: string;
  /** Its Streamable HTTP endpoint (https). */
  readonly url: string;
  /**
   * Let its tool annotations drive policy: `readOnlyHint` → read path, `destructiveHint: true` →
   * approval, `idempotentHint` → an uncertain call is retried with the same key. Untrusted tools are
   * plain write tools whose uncertain calls go to an operator.
   * @default false
   */
  readonly trusted?: boolean;
  /** Hard deadline of one call. @default Duration.seconds(10) */
  readonly timeout?: Duration;
}

/** The handlers, by name: the functions that run tools. */
export type HandlerName = 'api' | 'executor' | 'reconciler';

/**
 * A secret the deployment's tools read with `env.secret(name)`: a Secrets Manager secret (optionally
 * one member of its JSON) or an SSM SecureString parameter. Only its ARN or name is in the template;
 * reading it is granted to `handlers` alone.
 */
export type ToolSecret =
  | {
      readonly secret: ISecret;
      /** The member of the secret's JSON that holds the value. @default the whole secret string */
      readonly field?: string;
      /** Functions whose tools read it. @default every function that runs tools: api, executor, reconciler */
      readonly handlers?: readonly HandlerName[];
    }
  | {
      readonly parameter: IStringParameter;
      /** Functions whose tools read it. @default every function that runs tools: api, executor, reconciler */
      readonly handlers?: readonly HandlerName[];
    };

/**
 * One rule of {@link ToolLedgerProps.callerTools}: which tool names may be declared for operations
 * their caller executes, by whom, and what policy is forced on them.
 */
export interface CallerToolRuleProps {
  /** A tool name in which `*` stands for any run of name characters, e.g. `crm.*` or `*.delete`. */
  readonly pattern: string;
  /** Only this tenant (a key of `tenants`). @default every tenant */
  readonly tenant?: string;
  /**
   * Every matching operation is reserved `awaiting_approval` (a request may ask for approval anyway,
   * never for less).
   * @default false
   */
  readonly requiresApproval?: boolean;
  /** Cap of `max_attempts` for matching operations, 1 to 10 (the least cap of all matching rules wins). @default no cap */
  readonly maxAttempts?: number;
}

/**
 * Everything a deployment can change. With no props at all, the construct is a complete, secure
 * deployment of the shipped tools for no tenants; bind tenants to IAM principals to let anyone in.
 */
export interface ToolLedgerProps {
  /**
   * Tenants and the IAM role or user ARNs bound to each role, exactly as IAM shows them (a role's path
   * included); a role also admits its assumed-role sessions. The API derives tenant and roles from the
   * caller's principal; a role belongs to one tenant only (session ARNs, and one role under two
   * tenants, are refused at synth). The API's resource policy is built from this map: on each route
   * only the principals of the roles that route serves may invoke, whatever their identity policies
   * say. Same-account principals need nothing more; principals of another account also need an
   * identity policy in their own account allowing `execute-api:Invoke`. ARNs known at synth are
   * bundled with the API handler's code, so the map is not bounded by Lambda's 4 KB environment.
   * @default {} (no tenant: every request is 403)
   */
  readonly tenants?: Readonly<Record<string, TenantPrincipals>>;
  /**
   * Tenants the work queue may carry (the contract, §6); a message naming another tenant is not run.
   * @default every tenant in `tenants`
   */
  readonly queueTenants?: readonly string[];
  /**
   * Who may put work on the queue, and for which tenants (the contract, §6): the executor refuses a message
   * whose tenant its sender (SQS `SenderId`) may not act for, so one tenant's producer cannot create,
   * retry or take the operation IDs of another. The construct's own API and reconciler roles may send
   * for every tenant. {@link ToolLedger.grantEnqueue} with tenants adds to this list.
   * @default only the construct's own roles (every other sender's messages are refused)
   */
  readonly queueSenders?: readonly QueueSender[];
  /**
   * An EFS access point every handler mounts as the workspace root. The workspace tools keep their
   * effects in a folder, and each Lambda sandbox has its own `/tmp`: without a shared file system the
   * default tools are `webhook.post` alone, and a tools module with `workspace.*` tools is refused.
   * @default none: only tools whose effects live outside the sandbox
   */
  readonly sharedWorkspace?: SharedWorkspace;
  /**
   * Absolute path of a module whose default export is a `ToolFactory` (functions/tools/registry.ts).
   * It replaces the handlers' `#tool-ledger/tools` import at bundling time. The construct loads it at
   * synth to check every tool's retention and timeout (the contract, §8) and where its effects live.
   * @default `webhook.post` alone (functions/aws-default-tools.ts); every shipped tool
   * (functions/tools/builtin.ts) when `sharedWorkspace` is set
   */
  readonly toolsModule?: string;
  /**
   * Default retention of terminal records (`TOOL_LEDGER_RETENTION_SECONDS`). Must exceed the queue
   * retention + DLQ retention + one day (the contract, §8), or synth fails.
   * @default Duration.days(30)
   */
  readonly retention?: Duration;
  /**
   * Retention of tools that set their own `retention`, by tool name, checked like `retention`. The
   * construct reads the tools module's own values; these can only make the check stricter.
   * @default {}
   */
  readonly toolRetentions?: Readonly<Record<string, Duration>>;
  /**
   * Timeout (`timeoutMs`) of each tool, by name: synth fails when one cannot finish, with its commit,
   * within `executorTimeout`. The construct reads the tools module's own values; these can only make
   * the check stricter.
   * @default {}
   */
  readonly toolTimeouts?: Readonly<Record<string, Duration>>;
  /**
   * The deadline of each tool's `reconcile` call, by name: synth fails when one cannot fit in a
   * reconciler pass (80% of the reconciler's timeout) or in an operator's pass inside the API's 29 s,
   * each with a commit and the end of the pass. The construct reads the tools module's own values
   * (`reconcileTimeoutMs`, else `timeoutMs`); these can only make the check stricter.
   * @default {}
   */
  readonly toolReconcileTimeouts?: Readonly<Record<string, Duration>>;
  /** Work queue message retention. @default Duration.days(4) */
  readonly queueRetention?: Duration;
  /** Dead-letter queue message retention. @default Duration.days(14) */
  readonly deadLetterRetention?: Duration;
  /** Receives before a work message moves to the DLQ. @default 5 */
  readonly maxReceiveCount?: number;
  /**
   * Executor Lambda timeout; the work queue's visibility timeout is six times this (the contract, §6).
   * @default Duration.minutes(2)
   */
  readonly executorTimeout?: Duration;
  /** Messages per executor invocation (1 to 10). @default 5 */
  readonly executorBatchSize?: number;
  /**
   * Most concurrent executor invocations the SQS event source starts (2 to 1000): a burst on the queue
   * waits in the queue instead of flooding targets and the account's concurrency.
   * @default 10
   */
  readonly executorMaxConcurrency?: number;
  /**
   * Reserved concurrency per handler (`false`: none, draw from the account's shared pool). The
   * executor's must be at least `executorMaxConcurrency`, or synth fails. Reserving needs the account's
   * concurrency quota to keep 100 unreserved: on an account with a low quota set `false`.
   * @default api false, executor `executorMaxConcurrency`, reconciler 1 (one pass at a time)
   */
  readonly reservedConcurrency?: {
    readonly api?: ReservedConcurrency;
    readonly executor?: ReservedConcurrency;
    readonly reconciler?: ReservedConcurrency;
  };
  /**
   * How long a synchronous call may run (`TOOL_LEDGER_SYNC_WAIT_MS`); at most 27 s, which leaves the
   * commit 2 s inside API Gateway's 29 s.
   * @default Duration.seconds(25)
   */
  readonly syncWait?: Duration;
  /** Lease length beyond a worker's hard deadline (`TOOL_LEDGER_LEASE_GRACE_MS`). @default Duration.seconds(5) */
  readonly leaseGrace?: Duration;
  /** Approval deadline (`TOOL_LEDGER_APPROVAL_TTL_SECONDS`). @default Duration.days(1) */
  readonly approvalTtl?: Duration;
  /** Let a requester approve its own operation. @default false */
  readonly allowSelfApproval?: boolean;
  /**
   * Partitions of the attention GSI (`TOOL_LEDGER_ATTENTION_SHARDS`); synth refuses fewer than
   * `declaredThroughput` needs. Raise it freely; lowering it strands records in the dropped shards.
   * @default derived from declaredThroughput: max(8, ⌈firstExecutionsPerSecond ÷ 400⌉)
   */
  readonly attentionShards?: number;
  /**
   * The first executions per second the deployment must carry, in all and for its busiest tenant. It
   * sets the GSI shard counts (`TOOL_LEDGER_ATTENTION_SHARDS`, `TOOL_LEDGER_UNRESOLVED_SHARDS`) so no
   * index partition is asked for more than 80 % of its 1,000 write units per second; synth refuses a
   * declaration the shards cannot carry. Only raise it on a live table (see docs/performance.md, Capacity and ceilings).
   * @default { firstExecutionsPerSecond: 2000, perTenant: 400 }
   */
  readonly declaredThroughput?: DeclaredThroughput;
  /** How often the reconciler runs (whole minutes); also its timeout. @default Duration.minutes(1) */
  readonly reconcileInterval?: Duration;
  /** Origins `webhook.post` may call (`https://host[:port]`), `TOOL_LEDGER_WEBHOOK_ALLOW`. @default none */
  readonly webhookAllow?: readonly string[];
  /**
   * Origins whose servers dedupe on `Idempotency-Key` (`TOOL_LEDGER_WEBHOOK_IDEMPOTENT`).
   * @default none
   */
  readonly webhookIdempotentOrigins?: readonly string[];
  /**
   * Upstream MCP servers the MCP gateway serves through the ledger, each tool as `<name>.<tool>`
   * (`TOOL_LEDGER_MCP_UPSTREAMS`). URLs must be https; they come from here only, never from a caller.
   * @default none
   */
  readonly mcpUpstreams?: readonly McpUpstreamProps[];
  /**
   * Which tool names tenants may declare for operations they execute themselves (`"execution":
   * "caller"` on `POST /v1/operations`), and the policy forced on them (`TOOL_LEDGER_CALLER_TOOLS`):
   * a name is allowed when a rule for every tenant or for the caller's tenant matches it; matching
   * rules can force approval and cap the attempts. Names of the deployment's own tools are always
   * refused for caller execution.
   * @default any name, nothing forced
   */
  readonly callerTools?: readonly CallerToolRuleProps[];
  /**
   * Secrets the tools read (`env.secret(NAME)` in a tool), by name (`[A-Z][A-Z0-9_]*`): never in the
   * environment or the template, only where each lives; reading each is granted to the functions that
   * need it. Put tokens here, not in `environment`.
   * @default {}
   */
  readonly toolSecrets?: Readonly<Record<string, ToolSecret>>;
  /**
   * Extra environment variables for every handler, for a custom tools module's own settings (visible
   * in the template and the console: secrets go in `toolSecrets`). Names the construct sets are refused.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Memory of each handler, MB (CPU scales with it): one size for all, or a size per handler.
   * @default 512 for each
   */
  readonly memorySize?:
    | number
    | { readonly api?: number; readonly executor?: number; readonly reconciler?: number };
  /**
   * What happens to the table, its key and the log groups when the stack is deleted. RETAIN also turns
   * on the table's deletion protection; use DESTROY for throwaway dev stacks only.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /** Retention of the handlers' logs and the API access logs. @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
  /** Active X-Ray tracing on the handlers and the API stage. @default false */
  readonly tracing?: boolean;
  /**
   * `POWERTOOLS_SERVICE_NAME`, the `service` dimension the alarms read, and the REST API's name. The
   * default is unique per instance, so several deployments share an account and region without their
   * alarms reading each other's metrics.
   * @default the stack name and the construct's path in it, e.g. `ToolLedger-ToolLedger`
   */
  readonly serviceName?: string;
  /**
   * Stage-wide API throttling (requests per second, burst), so one runaway agent cannot use up the
   * account's API Gateway and Lambda quotas that every other API shares.
   * @default the declared throughput: { rateLimit: firstExecutionsPerSecond, burstLimit: twice that, at most 5000 } (2000/4000)
   */
  readonly apiThrottling?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * Requests per second each tenant may make, by tenant (`*` for every tenant not named): the API
   * handler counts a tenant's requests per second in the ledger table (one small write per request)
   * and answers 429 `throttled` with `Retry-After` above the limit, so one tenant's runaway agent
   * cannot take the stage's whole limit from the others. Counting fails open: if the count cannot be
   * written, the request goes on.
   * @default { '*': declaredThroughput.perTenant } (400)
   */
  readonly tenantRateLimits?: Readonly<Record<string, number>>;
  /**
   * Reconciler decisions in flight at once, in a scheduled pass and an operator's
   * (`TOOL_LEDGER_RECONCILE_PARALLELISM`): after a target's outage, how fast the due records clear.
   * @default 16
   */
  readonly reconcileParallelism?: number;
  /**
   * Create the account-level role API Gateway writes access and execution logs with
   * (`AWS::ApiGateway::Account`, with a role holding AmazonAPIGatewayPushToCloudWatchLogs), so the
   * first deploy succeeds in an account that has none (a stage with access logs fails to deploy
   * without it). It is one setting per account and region, shared by every REST API there: both are
   * retained when the stack is deleted, whatever `removalPolicy` says, so other APIs keep logging, and
   * replacing an existing setting with this role changes nothing for them (any role with that policy
   * serves every API). Set `false` where the account's setting is managed elsewhere.
   * @default true
   */
  readonly apiCloudWatchRole?: boolean;
  /** A WAFv2 web ACL (REGIONAL scope) to associate with the API stage. @default none */
  readonly webAclArn?: string;
  /** Bundle the AWS SDK instead of using the Lambda runtime's copy. @default false */
  readonly bundleAwsSdk?: boolean;
  /**
   * Entry files of the handlers, to wrap them with your own middleware.
   * @default functions/handlers/api.ts, executor.ts and reconciler.ts
   */
  readonly handlerEntries?: {
    readonly api?: string;
    readonly executor?: string;
    readonly reconciler?: string;
    readonly events?: string;
  };
  /**
   * The EventBridge bus completion events go to: one event per transition a caller or a person waits
   * for (terminal, `awaiting_approval`, `needs_reconciliation`), source `tool-ledger`. Rules on it can
   * match `detail.tenant`, `detail.state` or `detail.tool`.
   * @default a new bus
   */
  readonly eventBus?: IEventBus;
  /**
   * SNS topic every alarm notifies (ALARM and OK). Subscribe your pager or e-mail to
   * {@link ToolLedger.alarmTopic}.
   * @default a new topic, encrypted with its own key that only this account's CloudWatch alarms may use
   */
  readonly alarmTopic?: ITopic;
  /** Alarm thresholds. @default see each field */
  readonly alarmThresholds?: {
    /** Unresolved operations due in each pass, tolerated for 15 minutes. @default 50 */
    readonly unresolvedOperations?: number;
    /** p90 reconciliation latency tolerated for 15 minutes. @default Duration.minutes(10) */
    readonly reconciliationLatency?: Duration;
    /** Age of the oldest work message. @default Duration.minutes(15) */
    readonly queueAge?: Duration;
    /** Share of API responses that are 5xx, two 5-minute periods in a row. @default 0.05 */
    readonly apiServerErrorRate?: number;
    /** API p99 latency tolerated for 15 minutes. @default Duration.seconds(20) */
    readonly apiLatencyP99?: Duration;
    /** Age of the oldest dead letter. @default half of `deadLetterRetention` (7 days) */
    readonly deadLetterAge?: Duration;
    /**
     * Errors of one handler in a 5-minute period; the `*Errors` alarms fire when two of three periods
     * reach it, so a single error never pages. @default 1
     */
    readonly handlerErrors?: number;
    /**
     * DynamoDB throttle events (reads + writes) of the table or of one index in a 5-minute period;
     * the throttling alarms fire when two of three periods reach it. @default 1
     */
    readonly tableThrottles?: number;
  };

  // ── Production on AWS: API limits and logs, bring your own resources ─────────────────────────────
  /**
   * Throttling of `POST /v1/reconciliations`: each call runs a whole reconciler pass.
   * @default { rateLimit: 1, burstLimit: 2 }
   */
  readonly reconcileThrottling?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway execution logs (errors only, never request or response data). They need the account's
   * API Gateway logging role (`apiCloudWatchRole`, or one another stack set): without it, the stage
   * fails to deploy. Access logs are always on.
   * @default the value of `apiCloudWatchRole`
   */
  readonly apiExecutionLogging?: boolean;
  /** Per-method API metrics (billed as custom metrics); API-wide metrics are always there. @default false */
  readonly apiDetailedMetrics?: boolean;
  /**
   * Use this table instead of creating one. It must have the keys, TTL attribute and GSIs of
   * `LEDGER_TABLE` (functions/contract/table.ts); synth cannot see an imported table's schema.
   * @default a new table (on demand, PITR, customer-managed key)
   */
  readonly table?: ITable;
  /**
   * The KMS key of `table`, or the key to encrypt the new table with.
   * @default `table.encryptionKey` for a brought table; a new rotating key otherwise
   */
  readonly tableKey?: IKey;
  /**
   * Keep whole results too large for their record in this bucket instead of one the construct creates.
   * The functions get `s3:PutObject` (and the API `s3:GetObject`) on `results/*` only, and the use of
   * the bucket's `encryptionKey` through S3 when it has one. The bucket's settings are yours: keep it
   * private and TLS only, and expire `results/` no sooner than the longest retention of the records
   * plus a day, or replays answer `result_unavailable` once an object is gone.
   * @default a new bucket (the table's key or S3-managed encryption, TLS only, no public access,
   * versioning off, `results/` expiring a day after the longest retention)
   */
  readonly resultsBucket?: IBucket;
  /**
   * Use this work queue instead of creating one; requires `deadLetterQueue`. Its visibility timeout
   * must be at least six times `executorTimeout` and it must redrive to `deadLetterQueue`.
   * @default a new queue (SSE, TLS only)
   */
  readonly queue?: IQueue;
  /** The DLQ of `queue` (alarms watch it). @default a new queue */
  readonly deadLetterQueue?: IQueue;
  /**
   * A customer-managed KMS key for the work queue and its DLQ. The construct's own roles and the
   * producer policy get the key permissions sending and receiving take; a role that redrives the DLQ
   * needs `kms:Decrypt` and `kms:GenerateDataKey` on it too.
   * @default SQS-managed encryption (SSE-SQS)
   */
  readonly queueKey?: IKey;
  /**
   * A customer-managed KMS key for every log group of the deployment (the handlers' and the API's
   * access logs). A key of the same app is given the statement CloudWatch Logs needs; for a key from
   * elsewhere, add it yourself (synth warns).
   * @default CloudWatch Logs' own encryption
   */
  readonly logKey?: IKey;
  /**
   * Run every function that runs tools in a VPC, so a platform team controls their egress with
   * security groups and routes: the executor (queued work), the API (synchronous calls, and
   * `reconcile` in an operator's pass) and the reconciler (`reconcile`). The subnets need a path to
   * DynamoDB, SQS, CloudWatch and, with `toolSecrets`, Secrets Manager or SSM (NAT or VPC endpoints).
   * @default no VPC (the Lambda service's network, egress to anywhere)
   */
  readonly network?: HandlerNetwork;
  /**
   * @deprecated use `network`, which this now means: tools also run in the API and the reconciler, so
   * egress control on the executor alone left them uncontrolled.
   */
  readonly executorNetwork?: HandlerNetwork;
  /**
   * The API stage, the first segment of every path (`/<stage>/v1/operations`).
   * @default 'prod'
   */
  readonly stageName?: string;
  /**
   * A private REST API, reachable only through these interface VPC endpoints of `execute-api` (the
   * resource policy also refuses requests from anywhere else).
   * @default a regional endpoint
   */
  readonly endpoint?: { readonly private?: { readonly vpcEndpoints: readonly IVpcEndpoint[] } };
  /**
   * A custom domain (regional, TLS 1.2) mapped to the stage, at `basePath` if given.
   * @default none: the execute-api URL
   */
  readonly domainName?: {
    readonly name: string;
    readonly certificate: ICertificate;
    readonly basePath?: string;
  };
}
