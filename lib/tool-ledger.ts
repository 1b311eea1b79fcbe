import { Annotations, Duration, Validations } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Alarm, Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, type IEventBus, Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type Grant, type IGrantable, type IRole, ManagedPolicy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Function as HandlerLambda } from 'aws-cdk-lib/aws-lambda';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { EVENT_STATES } from '../functions/contract/completion-event';
import { SETTINGS } from '../functions/contract/environment';
import type { LedgerRole } from '../functions/contract/routes';
import { LEDGER_TABLE } from '../functions/contract/table';
import { AlarmTopic, allowAlarmsToPublish } from './alarm-topic';
import type { BundleSettings } from './bundling';
import { apiBundledFiles, apiEnvironment, commonEnvironment, executorEnvironment } from './environment';
import { HandlerFunction } from './handler-function';
import { instanceName } from './instance-name';
import { LedgerApi } from './ledger-api';
import { LedgerIdentity } from './ledger-identity';
import { LedgerTable } from './ledger-table';
import { LedgerMonitoring } from './monitoring';
import { QueueSenderBinding } from './queue-senders';
import { longestRetention, ResultsBucket } from './results-bucket';
import { resolveSettings } from './settings';
import { workspaceMount } from './shared-workspace';
import type { HandlerName, ToolLedgerProps } from './tool-ledger-props';
import { toolSecretsFor } from './tool-secrets';

export type {
  HandlerName,
  McpUpstreamProps,
  TenantPrincipals,
  ToolLedgerProps,
  ToolSecret,
} from './tool-ledger-props';

import { allowLogsToUse } from './log-key';
import { WorkQueue } from './work-queue';

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
  readonly table: ITable;
  /** The key that encrypts the table (undefined for a brought table without a customer-managed key). */
  readonly tableKey: IKey | undefined;
  /** The bucket of whole results too large for their record (created, or the `resultsBucket` prop). */
  readonly resultsBucket: IBucket;
  /** The work queue. */
  readonly queue: IQueue;
  /** The work queue's DLQ. */
  readonly deadLetterQueue: IQueue;
  /** The topic every alarm notifies. */
  readonly alarmTopic: ITopic;
  /** The name of this instance: the REST API's name and the metrics' `service` dimension. */
  readonly instanceName: string;
  /** The REST API; its `url` ends with the stage, and routes start with `/v1`. */
  readonly api: RestApi;
  /** The API handler. */
  readonly apiFunction: HandlerLambda;
  /** The SQS executor. */
  readonly executorFunction: HandlerLambda;
  /** The scheduled reconciler. */
  readonly reconcilerFunction: HandlerLambda;
  /** `execute-api:Invoke` on each role's routes; attach to the roles bound in `tenants`. */
  readonly policies: Readonly<Record<LedgerRole, ManagedPolicy>>;
  /** `sqs:SendMessage` on the work queue, for orchestrators that enqueue work directly. */
  readonly producerPolicy: ManagedPolicy;
  /** Alarms by name. */
  readonly alarms: Readonly<Record<string, Alarm>>;
  /** The operations dashboard. */
  readonly dashboard: Dashboard;
  /** The bus completion events go to (`eventBus`, or the one the construct created). */
  readonly eventBus: IEventBus;
  /**
   * The function that turns the table's stream into completion events; absent when an existing table
   * was given without its stream (`tableStreamArn`), where no events are sent.
   */
  readonly eventsFunction?: HandlerLambda;

  private readonly ledgerApi: LedgerApi;
  private readonly senders: QueueSenderBinding;

  constructor(scope: Construct, id: string, props: ToolLedgerProps = {}) {
    super(scope, id);
    const settings = resolveSettings(props, { defaultServiceName: instanceName(this) });
    this.instanceName = settings.serviceName;

    const ledgerTable = new LedgerTable(this, 'Ledger', {
      removalPolicy: settings.removalPolicy,
      existingTable: props.table,
      existingKey: props.tableKey,
    });
    this.table = ledgerTable.table;
    this.tableKey = ledgerTable.key;
    const identity = new LedgerIdentity(this, 'Identity', { table: this.table, tableKey: this.tableKey });

    const work = new WorkQueue(this, 'Work', {
      retention: settings.queueRetention,
      deadLetterRetention: settings.deadLetterRetention,
      visibilityTimeout: settings.visibilityTimeout,
      maxReceiveCount: settings.maxReceiveCount,
      removalPolicy: settings.removalPolicy,
      existing:
        props.queue && props.deadLetterQueue
          ? { queue: props.queue, deadLetterQueue: props.deadLetterQueue }
          : undefined,
      ...(props.queueKey === undefined ? {} : { key: props.queueKey }),
    });
    this.queue = work.queue;
    this.deadLetterQueue = work.deadLetterQueue;

    // Whole results too large for their record: written before the commit that names them.
    const results = new ResultsBucket(this, 'Results', {
      retention: longestRetention(settings.retention, Object.values(settings.toolRetentions)),
      key: this.tableKey,
      existingBucket: props.resultsBucket,
      removalPolicy: settings.removalPolicy,
    });
    this.resultsBucket = results.bucket;

    const environment = commonEnvironment(settings, {
      tableName: this.table.tableName,
      queueUrl: this.queue.queueUrl,
      resultsBucket: this.resultsBucket.bucketName,
      // The handlers start only once the table's identity is checked (and say which ledger they serve).
      ledgerId: identity.ledgerId,
    });
    // Without upstreams the MCP gateway is left out of the bundles (lib/bundling.ts).
    const upstreams = settings.mcpUpstreams !== '';
    const bundling: BundleSettings = {
      toolsModule: settings.toolsModule,
      bundleAwsSdk: settings.bundleAwsSdk,
      upstreams,
    };
    const mount = workspaceMount(settings.sharedWorkspace);
    // Every function that runs tools (synchronous calls and operator passes in the API, queued work in
    // the executor, `reconcile` in the reconciler) runs in the deployment's network, if it has one.
    const network = props.network ?? props.executorNetwork;
    const logKey = props.logKey;
    if (logKey !== undefined) allowLogsToUse(this, logKey);
    const common = {
      ...(logKey === undefined ? {} : { logKey }),
      ...(mount === undefined ? {} : { mount }),
      ...(network === undefined ? {} : { network }),
      bundling,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
      tracing: settings.tracing,
    };

    const api = new HandlerFunction(this, 'ApiHandler', {
      ...common,
      bundling: { ...bundling, files: apiBundledFiles(settings) },
      entry: settings.handlerEntries.api,
      description: 'tool-ledger HTTP API (the contract, §5)',
      memorySize: settings.memorySize.api,
      timeout: settings.apiTimeout,
      environment: { ...environment, ...apiEnvironment(this, settings) },
      reservedConcurrentExecutions: settings.reservedConcurrency.api,
    });
    // POST /v1/reconciliations runs a pass over the caller's tenant through `unresolved`, never the
    // deployment-wide `attention` index (SendMessage is needed anyway: an approval enqueues). The
    // indexes project keys (and the states filtered on): readers fetch whole items with BatchGetItem.
    // `operations` serves the listing of any state, tool or time window (`tool-ledger list`).
    ledgerTable.grant(
      api.role,
      ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'],
      [LEDGER_TABLE.indexes.unresolved.name, LEDGER_TABLE.indexes.operations.name],
    );
    ledgerTable.grantReadCacheDelete(api.role);
    this.queue.grantSendMessages(api.role);
    // The API commits outcomes (synchronous calls, callers' outcomes, resolutions) and answers with them.
    results.grantWrite(api.role);
    results.grantRead(api.role);
    const secrets = props.toolSecrets ?? {};
    const withSecrets = (handler: HandlerName, made: HandlerFunction) => {
      for (const [name, value] of Object.entries(toolSecretsFor(this, secrets, handler, made.role)))
        made.fn.addEnvironment(name, value);
    };
    withSecrets('api', api);

    this.senders = new QueueSenderBinding(this, settings.queueTenants);
    const executor = new HandlerFunction(this, 'ExecutorHandler', {
      ...common,
      entry: settings.handlerEntries.executor,
      description: 'tool-ledger SQS executor (the contract, §6)',
      memorySize: settings.memorySize.executor,
      timeout: settings.executorTimeout,
      environment: { ...environment, ...executorEnvironment(settings), ...this.senders.environment() },
      reservedConcurrentExecutions: settings.reservedConcurrency.executor,
    });
    withSecrets('executor', executor);
    ledgerTable.grant(executor.role, ['GetItem', 'PutItem', 'UpdateItem'], []);
    ledgerTable.grantReadCacheDelete(executor.role);
    results.grantWrite(executor.role);
    work.restrictConsumers(executor.role);
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
      description: 'tool-ledger reconciler (the contract, §7)',
      memorySize: settings.memorySize.reconciler,
      timeout: settings.reconcilerTimeout,
      environment,
      reservedConcurrentExecutions: settings.reservedConcurrency.reconciler,
      // The next tick is the retry; an immediate async retry would only overlap with it. An event that
      // waited (reserved concurrency 1 while a pass runs) longer than a tick is superseded by the next.
      retryAttempts: 0,
      maxEventAge: Duration.seconds(Math.max(60, settings.reconcileInterval.toSeconds())),
    });
    ledgerTable.grant(
      reconciler.role,
      ['GetItem', 'BatchGetItem', 'UpdateItem'],
      [LEDGER_TABLE.indexes.attention.name],
      [LEDGER_TABLE.indexes.unresolved.name],
    );
    withSecrets('reconciler', reconciler);
    // An `applied` verdict records the result the tool found.
    results.grantWrite(reconciler.role);
    this.queue.grantSendMessages(reconciler.role);
    // The stack's own producers enqueue for every tenant; everyone else only for tenants bound to it.
    this.senders.trust(api.role);
    this.senders.trust(reconciler.role);
    for (const sender of props.queueSenders ?? []) this.senders.add(sender);
    new Rule(this, 'ReconcileSchedule', {
      description: 'Runs the tool-ledger reconciler',
      schedule: Schedule.rate(settings.reconcileInterval),
      targets: [new LambdaFunction(reconciler.fn)],
    });

    // Completion events: the table's stream (every write that landed, in order per operation) to the
    // bus, retried until sent, so a crash between a transition and its event still sends it.
    this.eventBus =
      props.eventBus ?? new EventBus(this, 'Events', { description: 'tool-ledger completion events' });
    if (this.table.tableStreamArn === undefined) {
      Annotations.of(this).addWarningV2(
        'tool-ledger:no-table-stream',
        'The existing table was given without its stream (NEW_AND_OLD_IMAGES): no completion events are sent.',
      );
    } else {
      const events = new HandlerFunction(this, 'EventsHandler', {
        ...(logKey === undefined ? {} : { logKey }),
        bundling,
        logRetention: settings.logRetention,
        removalPolicy: settings.removalPolicy,
        tracing: settings.tracing,
        entry: settings.handlerEntries.events,
        description: 'tool-ledger completion events (table stream to EventBridge)',
        memorySize: 256,
        timeout: Duration.seconds(60),
        environment: {
          [SETTINGS.serviceName.name]: settings.serviceName,
          [SETTINGS.eventBus.name]: this.eventBus.eventBusName,
        },
      });
      this.eventBus.grantPutEventsTo(events.fn);
      events.fn.addEventSource(
        new DynamoEventSource(this.table, {
          startingPosition: StartingPosition.TRIM_HORIZON,
          batchSize: 100,
          reportBatchItemFailures: true,
          // Only writes that land in a waited-for state reach the function at all.
          filters: [
            FilterCriteria.filter({
              eventName: FilterRule.or('INSERT', 'MODIFY'),
              dynamodb: { NewImage: { state: { S: FilterRule.or(...EVENT_STATES) } } },
            }),
          ],
        }),
      );
      this.eventsFunction = events.fn;
      // Reading a table's stream needs dynamodb:ListStreams, which IAM grants only on `*`.
      Validations.of(events.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'dynamodb:ListStreams, needed to read the ledger table stream, takes no resource but *',
      });
    }

    this.apiFunction = api.fn;
    this.executorFunction = executor.fn;
    this.reconcilerFunction = reconciler.fn;

    this.ledgerApi = new LedgerApi(this, 'Http', {
      handler: api.fn,
      logKey,
      logRetention: settings.logRetention,
      removalPolicy: settings.removalPolicy,
      tracing: settings.tracing,
      name: settings.serviceName,
      tenants: settings.tenants,
      throttling: settings.apiThrottling,
      reconcileThrottling: settings.reconcileThrottling,
      detailedMetrics: settings.apiDetailedMetrics,
      executionLogging: settings.apiExecutionLogging,
      cloudWatchRole: settings.apiCloudWatchRole,
      webAclArn: settings.webAclArn,
      stageName: settings.stageName,
      privateEndpoints: props.endpoint?.private?.vpcEndpoints,
      domainName: props.domainName,
    });
    this.api = this.ledgerApi.api;
    this.policies = this.ledgerApi.policies;
    this.producerPolicy = new ManagedPolicy(this, 'ProducerPolicy', {
      description: 'tool-ledger producer: send work messages to the work queue',
      statements: [
        new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }),
        // A queue under a customer-managed key takes a data key to send.
        ...(this.queue.encryptionMasterKey
          ? [
              new PolicyStatement({
                actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
                resources: [this.queue.encryptionMasterKey.keyArn],
              }),
            ]
          : []),
      ],
    });

    this.alarmTopic =
      props.alarmTopic ?? new AlarmTopic(this, 'Alarms', { removalPolicy: settings.removalPolicy }).topic;
    allowAlarmsToPublish(this, this.alarmTopic);
    const monitoring = new LedgerMonitoring(this, 'Monitoring', {
      serviceName: settings.serviceName,
      api: this.api,
      tableName: this.table.tableName,
      functions: {
        api: { fn: api.fn, timeout: settings.apiTimeout },
        executor: { fn: executor.fn, timeout: settings.executorTimeout },
        reconciler: { fn: reconciler.fn, timeout: settings.reconcilerTimeout },
      },
      eventsFunction: this.eventsFunction,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      reconcileInterval: settings.reconcileInterval,
      unresolvedThreshold: settings.unresolvedThreshold,
      reconciliationLatencyThreshold: settings.reconciliationLatencyThreshold,
      queueAgeThreshold: settings.queueAgeThreshold,
      apiServerErrorRate: settings.apiServerErrorRate,
      apiLatencyThreshold: settings.apiLatencyThreshold,
      deadLetterAgeThreshold: settings.deadLetterAgeThreshold,
      handlerErrorThreshold: settings.handlerErrorThreshold,
      tableThrottleThreshold: settings.tableThrottleThreshold,
      alarmTopic: this.alarmTopic,
      tenants: Object.keys(settings.tenants),
      transitionLogGroups: [api.logGroup, executor.logGroup, reconciler.logGroup],
    });
    this.alarms = monitoring.alarms;
    this.dashboard = monitoring.dashboard;
  }

  /**
   * Allow a principal of this app's account to call the agent routes: run tool calls, read operations
   * and tools. The resource policy still admits it only if it is bound as an agent in `tenants`. A role
   * of another account is refused (nothing can be attached to it from here).
   */
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

  /**
   * Allow a principal to send work messages (the contract, §6) to the work queue, for the tenants given: the
   * executor refuses its messages for any other tenant. A role of this app is bound by its unique ID
   * (`role.roleId`); for a role defined elsewhere, list its ID in `queueSenders` instead. Without
   * tenants the principal may send, and every message it sends is refused.
   *
   * @example
   * ```ts
   * ledger.grantEnqueue(acmeOrchestrator, ['acme']);
   * ```
   */
  grantEnqueue(grantee: IGrantable, tenants: readonly string[] = []): Grant {
    if (tenants.length > 0) this.senders.add({ principal: grantee as IRole, tenants });
    return this.queue.grantSendMessages(grantee);
  }
}
