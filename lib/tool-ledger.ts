import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Alarm, Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type Grant, type IGrantable, ManagedPolicy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Key } from 'aws-cdk-lib/aws-kms';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { lambdaBundling } from './bundling';
import type { DeclaredThroughput } from './capacity';
import { apiEnvironment, commonEnvironment, executorEnvironment } from './environment';
import { HandlerFunction } from './handler-function';
import { LedgerApi } from './ledger-api';
import { LedgerTable } from './ledger-table';
import { LedgerMonitoring } from './monitoring';
import type { LedgerRole } from './routes';
import { resolveSettings } from './settings';
import { WorkQueue } from './work-queue';

/** IAM principals of one tenant, by role. Role ARNs also match the role's assumed-role sessions. */
export interface TenantPrincipals {
  /** May run tool calls (`POST /v1/operations`) and read operations and tools. @default none */
  readonly agents?: readonly string[];
  /** May approve or reject operations that require approval. @default none */
  readonly approvers?: readonly string[];
  /** May list unresolved operations, resolve uncertain ones and run a reconciliation pass. @default none */
  readonly operators?: readonly string[];
}

/**
 * Everything a deployment can change. With no props at all, the construct is a complete, secure
 * deployment of the shipped tools for no tenants; bind tenants to IAM principals to let anyone in.
 */
export interface ToolLedgerProps {
  /**
   * Tenants and the IAM principal ARNs (roles, users, or assumed-role sessions) bound to each role.
   * The API derives tenant and roles from the caller's principal (SPEC §1); a principal belongs to one
   * tenant only. The principals also need `execute-api:Invoke`: attach {@link ToolLedger.policies} or
   * use {@link ToolLedger.grantAgent} and its siblings.
   * @default {} (no tenant: every request is 403)
   */
  readonly tenants?: Readonly<Record<string, TenantPrincipals>>;
  /**
   * Tenants the work queue may carry (SPEC §6); a message naming another tenant is not run.
   * @default every tenant in `tenants`
   */
  readonly queueTenants?: readonly string[];
  /**
   * Absolute path of a module whose default export is a `ToolFactory` (functions/tools/registry.ts).
   * It replaces the handlers' `#tool-ledger/tools` import at bundling time.
   * @default the shipped tools, functions/tools/builtin.ts
   */
  readonly toolsModule?: string;
  /**
   * Default retention of terminal records (`TOOL_LEDGER_RETENTION_SECONDS`). Must exceed the queue
   * retention + DLQ retention + one day (SPEC §8), or synth fails.
   * @default Duration.days(30)
   */
  readonly retention?: Duration;
  /**
   * Retention of tools that set their own `retention`, by tool name, checked like `retention`.
   * bin/app.ts fills it by loading the tools module at synth time.
   * @default {}
   */
  readonly toolRetentions?: Readonly<Record<string, Duration>>;
  /**
   * Timeout (`timeoutMs`) of each tool, by name: synth fails when one cannot finish, with its commit,
   * within `executorTimeout`. bin/app.ts fills it from the tools module.
   * @default {}
   */
  readonly toolTimeouts?: Readonly<Record<string, Duration>>;
  /** Work queue message retention. @default Duration.days(4) */
  readonly queueRetention?: Duration;
  /** Dead-letter queue message retention. @default Duration.days(14) */
  readonly deadLetterRetention?: Duration;
  /** Receives before a work message moves to the DLQ. @default 5 */
  readonly maxReceiveCount?: number;
  /**
   * Executor Lambda timeout; the work queue's visibility timeout is six times this (SPEC §6).
   * @default Duration.minutes(2)
   */
  readonly executorTimeout?: Duration;
  /** Messages per executor invocation (1 to 10). @default 5 */
  readonly executorBatchSize?: number;
  /**
   * Most concurrent executor invocations the SQS event source starts (2 to 1000); protects targets.
   * @default no limit beyond the account's
   */
  readonly executorMaxConcurrency?: number;
  /** Reserved concurrency per handler. @default none */
  readonly reservedConcurrency?: {
    readonly api?: number;
    readonly executor?: number;
    readonly reconciler?: number;
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
   * declaration the shards cannot carry. Only raise it on a live table (see README, Capacity and ceilings).
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
   * Extra environment variables for every handler, for a custom tools module's own settings. Names the
   * construct sets are refused.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>>;
  /** Memory of each handler, MB. @default 512 */
  readonly memorySize?: number;
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
   * `POWERTOOLS_SERVICE_NAME`, and the `service` dimension the alarms read; change it to run two
   * deployments in one account and region.
   * @default 'tool-ledger'
   */
  readonly serviceName?: string;
  /** Stage-wide API throttling. @default the account's API Gateway limits */
  readonly apiThrottling?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * Create the account-level role API Gateway needs to write execution logs. It is one setting per
   * account and region: turn this off when another stack already manages it.
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
  };
  /** SNS topic for alarm and OK notifications. @default alarms without actions */
  readonly alarmTopic?: ITopic;
  /** Alarm thresholds. @default 50 unresolved operations, 10 minutes latency, 15 minutes queue age */
  readonly alarmThresholds?: {
    /** Unresolved operations tolerated for 15 minutes. */
    readonly unresolvedOperations?: number;
    /** p90 reconciliation latency tolerated for 15 minutes. */
    readonly reconciliationLatency?: Duration;
    /** Age of the oldest work message. */
    readonly queueAge?: Duration;
  };
}

/**
 * tool-ledger on AWS: the DynamoDB ledger, the work queue and its DLQ, the REST API (IAM auth), the
 * executor (SQS, partial batch failures) and the scheduled reconciler, with alarms and a dashboard.
 *
 * @example
 * ```ts
 * const ledger = new ToolLedger(this, 'Ledger', {
 *   tenants: { acme: { agents: [agentRole.roleArn], operators: [opsRole.roleArn] } },
 *   toolsModule: path.resolve('tools/acme-tools.ts'),
 * });
 * ledger.grantAgent(agentRole);
 * ledger.grantOperator(opsRole);
 * ```
 */
export class ToolLedger extends Construct {
  /** The ledger table. */
  readonly table: Table;
  /** The key that encrypts the table. */
  readonly tableKey: Key;
  /** The work queue. */
  readonly queue: Queue;
  /** The work queue's DLQ. */
  readonly deadLetterQueue: Queue;
  /** The REST API; its `url` ends with the stage, and routes start with `/v1`. */
  readonly api: RestApi;
  /** The API handler. */
  readonly apiFunction: NodejsFunction;
  /** The SQS executor. */
  readonly executorFunction: NodejsFunction;
  /** The scheduled reconciler. */
  readonly reconcilerFunction: NodejsFunction;
  /** `execute-api:Invoke` on each role's routes; attach to the roles bound in `tenants`. */
  readonly policies: Readonly<Record<LedgerRole, ManagedPolicy>>;
  /** `sqs:SendMessage` on the work queue, for orchestrators that enqueue work directly. */
  readonly producerPolicy: ManagedPolicy;
  /** Alarms by name. */
  readonly alarms: Readonly<Record<string, Alarm>>;
  /** The operations dashboard. */
  readonly dashboard: Dashboard;

  private readonly ledgerApi: LedgerApi;

  constructor(scope: Construct, id: string, props: ToolLedgerProps = {}) {
    super(scope, id);
    const settings = resolveSettings(props);

    const ledgerTable = new LedgerTable(this, 'Ledger', { removalPolicy: settings.removalPolicy });
    this.table = ledgerTable.table;
    this.tableKey = ledgerTable.key;

    const work = new WorkQueue(this, 'Work', {
      retention: settings.queueRetention,
      deadLetterRetention: settings.deadLetterRetention,
      visibilityTimeout: settings.visibilityTimeout,
      maxReceiveCount: settings.maxReceiveCount,
    });
    this.queue = work.queue;
    this.deadLetterQueue = work.deadLetterQueue;

    const environment = commonEnvironment(settings, {
      tableName: this.table.tableName,
      queueUrl: this.queue.queueUrl,
    });
    const bundling = lambdaBundling({
      toolsModule: settings.toolsModule,
      bundleAwsSdk: settings.bundleAwsSdk,
    });
    const common = {
      memorySize: settings.memorySize,
      bundling,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
      tracing: settings.tracing,
    };

    const api = new HandlerFunction(this, 'ApiHandler', {
      ...common,
      entry: settings.handlerEntries.api,
      description: 'tool-ledger HTTP API (SPEC §5)',
      timeout: settings.apiTimeout,
      environment: { ...environment, ...apiEnvironment(this, settings) },
      reservedConcurrentExecutions: settings.reservedConcurrency.api,
    });
    // `attention` and SendMessage also serve POST /v1/reconciliations, which runs the reconciler's pass
    // (SendMessage is needed anyway: an approval enqueues the operation).
    ledgerTable.grant(
      api.role,
      ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'],
      ['unresolved', 'attention'],
    );
    ledgerTable.grantReadCacheDelete(api.role);
    this.queue.grantSendMessages(api.role);

    const executor = new HandlerFunction(this, 'ExecutorHandler', {
      ...common,
      entry: settings.handlerEntries.executor,
      description: 'tool-ledger SQS executor (SPEC §6)',
      timeout: settings.executorTimeout,
      environment: { ...environment, ...executorEnvironment(settings) },
      reservedConcurrentExecutions: settings.reservedConcurrency.executor,
    });
    ledgerTable.grant(executor.role, ['GetItem', 'PutItem', 'UpdateItem'], []);
    ledgerTable.grantReadCacheDelete(executor.role);
    executor.fn.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: settings.executorBatchSize,
        reportBatchItemFailures: true,
        maxConcurrency: settings.executorMaxConcurrency,
      }),
    );

    const reconciler = new HandlerFunction(this, 'ReconcilerHandler', {
      ...common,
      entry: settings.handlerEntries.reconciler,
      description: 'tool-ledger reconciler (SPEC §7)',
      timeout: settings.reconcilerTimeout,
      environment,
      reservedConcurrentExecutions: settings.reservedConcurrency.reconciler,
      // The next tick is the retry; an immediate async retry would only overlap with it.
      retryAttempts: 0,
    });
    ledgerTable.grant(reconciler.role, ['GetItem', 'BatchGetItem', 'UpdateItem'], ['attention']);
    this.queue.grantSendMessages(reconciler.role);
    new Rule(this, 'ReconcileSchedule', {
      description: 'Runs the tool-ledger reconciler',
      schedule: Schedule.rate(settings.reconcileInterval),
      targets: [new LambdaFunction(reconciler.fn)],
    });

    this.apiFunction = api.fn;
    this.executorFunction = executor.fn;
    this.reconcilerFunction = reconciler.fn;

    this.ledgerApi = new LedgerApi(this, 'Http', {
      handler: api.fn,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
      tracing: settings.tracing,
      throttling: settings.apiThrottling,
      cloudWatchRole: settings.apiCloudWatchRole,
      webAclArn: settings.webAclArn,
    });
    this.api = this.ledgerApi.api;
    this.policies = this.ledgerApi.policies;
    this.producerPolicy = new ManagedPolicy(this, 'ProducerPolicy', {
      description: 'tool-ledger producer: send work messages to the work queue',
      statements: [new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] })],
    });

    const monitoring = new LedgerMonitoring(this, 'Monitoring', {
      serviceName: settings.serviceName,
      api: this.api,
      functions: { api: api.fn, executor: executor.fn, reconciler: reconciler.fn },
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      reconcileInterval: settings.reconcileInterval,
      unresolvedThreshold: settings.unresolvedThreshold,
      reconciliationLatencyThreshold: settings.reconciliationLatencyThreshold,
      queueAgeThreshold: settings.queueAgeThreshold,
      alarmTopic: props.alarmTopic,
    });
    this.alarms = monitoring.alarms;
    this.dashboard = monitoring.dashboard;
  }

  /** Allow a principal to call the agent routes: run tool calls, read operations and tools. */
  grantAgent(grantee: IGrantable): Grant {
    return this.ledgerApi.grant('agent', grantee);
  }

  /** Allow a principal to call the approver routes: decide approvals, read operations and tools. */
  grantApprover(grantee: IGrantable): Grant {
    return this.ledgerApi.grant('approver', grantee);
  }

  /**
   * Allow a principal to call the operator routes: list unresolved operations, resolve them, run a
   * reconciliation pass now.
   */
  grantOperator(grantee: IGrantable): Grant {
    return this.ledgerApi.grant('operator', grantee);
  }

  /** Allow a principal to send work messages (SPEC §6) to the work queue. */
  grantEnqueue(grantee: IGrantable): Grant {
    return this.queue.grantSendMessages(grantee);
  }
}
