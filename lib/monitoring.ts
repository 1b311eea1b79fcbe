import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  LogQueryVisualizationType,
  LogQueryWidget,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { LEDGER_METRICS, METRICS_NAMESPACE } from '../functions/contract/metrics';
import { LEDGER_INDEXES } from '../functions/contract/table';
import { NEAR_TIMEOUT_SHARE, PASS_TIME_SHARE } from '../functions/contract/time-budget';
import { TRANSITION_LOG_MESSAGE } from '../functions/contract/transition-log';
import { STATES, TERMINAL_STATES } from '../functions/domain/states';

/** Most tenants the dashboard's per-tenant views name; the rest are in the logs, not on the dashboard. */
export const MAX_DASHBOARD_TENANTS = 20;

/**
 * Alarms and a dashboard for an operator who must answer two questions: is any operation stuck where
 * only a human can move it, and is the machinery (queue, handlers, reconciler) healthy?
 */

/*
 * Metric names and their namespace are the handlers' (functions/contract/metrics.ts): they emit EMF
 * with the dimension `service` = the service name. Alarms read the `service`-only dimension set;
 * per-tool series (`service`, `tool`) are for the dashboard. `OpenUnresolved` and
 * `OpenNeedsReconciliation` are gauges: the reconciler counts the unresolved index after every pass
 * and emits the current stock (zero included), so an alarm on them stays in ALARM for as long as an
 * operation is stuck, unlike a count of transitions that returns to OK five minutes later.
 */

/** What the alarms watch. */
export interface LedgerMonitoringProps {
  /** `POWERTOOLS_SERVICE_NAME`: the `service` dimension of every ledger metric. */
  serviceName: string;
  /** The API. */
  api: RestApi;
  /** The ledger table's name (its GSIs are the contract's). */
  tableName: string;
  /** The handlers, by name, with their timeouts. */
  functions: Readonly<Record<'api' | 'executor' | 'reconciler', { fn: IFunction; timeout: Duration }>>;
  /** The completion events function, when the table's stream feeds one. */
  eventsFunction?: IFunction | undefined;
  /** Work queue. */
  queue: IQueue;
  /** Dead-letter queue. */
  deadLetterQueue: IQueue;
  /** How often the reconciler runs. */
  reconcileInterval: Duration;
  /** Alarm when more operations than this are unresolved for 15 minutes. */
  unresolvedThreshold: number;
  /** Alarm when p90 reconciliation latency stays above this for 15 minutes. */
  reconciliationLatencyThreshold: Duration;
  /** Alarm when the oldest work message is older than this. */
  queueAgeThreshold: Duration;
  /** Alarm when more than this fraction of API responses are 5xx, two periods in a row. */
  apiServerErrorRate: number;
  /** Alarm when the API's p99 latency stays above this for 15 minutes. */
  apiLatencyThreshold: Duration;
  /** Alarm when the oldest dead letter is older than this (before SQS deletes it). */
  deadLetterAgeThreshold: Duration;
  /** Handler errors in a 5-minute period that count towards the `*Errors` alarms (two periods of three). */
  handlerErrorThreshold: number;
  /** Throttle events of the table or of one index in a 5-minute period (two periods of three). */
  tableThrottleThreshold: number;
  /** Where alarm and OK notifications go. */
  alarmTopic: ITopic;
  /**
   * The tenants bound at synth: with any, the dashboard gets per-tenant views of the first
   * {@link MAX_DASHBOARD_TENANTS} in name order. @default none (no per-tenant views)
   */
  tenants?: readonly string[] | undefined;
  /** The log groups the transition lines go to (the API, executor and reconciler handlers'). */
  transitionLogGroups?: readonly ILogGroup[] | undefined;
}

/** The alarms (by name) and the dashboard. */
export class LedgerMonitoring extends Construct {
  /** Every alarm, by a stable name (see the alarm table of docs/deploying.md). */
  readonly alarms: Readonly<Record<string, Alarm>>;
  /** One dashboard with the API, the ledger, the reconciler, the queues and the handlers. */
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: LedgerMonitoringProps) {
    super(scope, id);
    const five = Duration.minutes(5);
    const ledger = (metricName: string, statistic: string, dimensions: Record<string, string> = {}) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        statistic,
        period: five,
        dimensionsMap: { service: props.serviceName, ...dimensions },
      });
    const alarms: Record<string, Alarm> = {};
    const alarm = (
      name: string,
      metric: IMetric,
      threshold: number,
      description: string,
      options: { periods?: number; datapoints?: number; missing?: TreatMissingData; below?: boolean } = {},
    ) => {
      const created = new Alarm(this, name, {
        metric,
        threshold,
        evaluationPeriods: options.periods ?? 1,
        ...(options.datapoints === undefined ? {} : { datapointsToAlarm: options.datapoints }),
        comparisonOperator: options.below
          ? ComparisonOperator.LESS_THAN_THRESHOLD
          : ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: options.missing ?? TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      created.addAlarmAction(new SnsAction(props.alarmTopic));
      created.addOkAction(new SnsAction(props.alarmTopic));
      alarms[name] = created;
      return created;
    };

    alarm(
      'DeadLetters',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      1,
      'Work messages failed maxReceiveCount times. Their operations are in the ledger; inspect the DLQ, fix the cause, then redrive.',
    );
    alarm(
      'WorkQueueAge',
      props.queue.metricApproximateAgeOfOldestMessage({ period: five, statistic: 'Maximum' }),
      props.queueAgeThreshold.toSeconds(),
      'The oldest work message waits too long: the executor is failing, throttled or out of concurrency.',
    );
    alarm(
      'UnresolvedOperations',
      ledger(LEDGER_METRICS.unresolvedOperations, 'Maximum'),
      props.unresolvedThreshold,
      'For 15 minutes, each reconciler pass found many unresolved operations due for attention (stale queued, expired leases, uncertain, retryable, expired approvals): targets or the executor are failing. Every pass reports this, so no report at all also alarms: the backlog is then unknown (see ReconcilerIncomplete, ReconcilerStalled).',
      // Every scheduled pass emits it (a lower bound when it could not finish): a period without it
      // means no pass reported, exactly when the backlog may be growing, so missing data is a breach.
      { periods: 3, missing: TreatMissingData.BREACHING },
    );
    alarm(
      'ReconcilerIncomplete',
      ledger(LEDGER_METRICS.incompletePasses, 'Minimum'),
      1,
      `For 15 minutes no reconciler pass reached every due operation (each ran out of its ${PASS_TIME_SHARE * 100}% share of the invocation even for quick decisions), or no pass reported at all (killed by its timeout, failing before its end): the backlog outgrows what a pass can do. Check the reconcile pass logs (complete, deferred, actions); raise reconcileParallelism or reconcileInterval, or find the failing target.`,
      // A pass that cannot finish because it is killed emits nothing: missing data is a breach.
      { periods: 3, missing: TreatMissingData.BREACHING },
    );
    alarm(
      'NeedsReconciliation',
      ledger(LEDGER_METRICS.openNeedsReconciliation, 'Maximum'),
      1,
      'At least one operation is in needs_reconciliation (a gauge the reconciler emits every pass): the reconciler could not decide and an operator must resolve it. List them with GET /v1/operations?state=needs_reconciliation, resolve with POST /v1/operations/{id}/resolution. The alarm stays on until none is left.',
      // No data means no pass (ReconcilerStalled says so): keep the last state rather than turn OK.
      { missing: TreatMissingData.IGNORE },
    );
    alarm(
      'DeadLetterAge',
      props.deadLetterQueue.metricApproximateAgeOfOldestMessage({ period: five, statistic: 'Maximum' }),
      props.deadLetterAgeThreshold.toSeconds(),
      'A dead letter has waited long: SQS deletes it at the DLQ retention, and with it the evidence. Inspect and redrive or purge it.',
    );
    alarm(
      'ApiServerErrors',
      props.api.metricServerError({ period: five, statistic: 'Average' }),
      props.apiServerErrorRate,
      'Too many API responses are 5xx: 503 ledger_unavailable (DynamoDB throttled or unreachable), 504 gateway timeouts, or handler failures. See the access logs by status and the API handler logs.',
      { periods: 2 },
    );
    alarm(
      'ApiLatency',
      props.api.metricLatency({ period: five, statistic: 'p99' }),
      props.apiLatencyThreshold.toMilliseconds(),
      'The API p99 latency is high: synchronous tools are slow, or DynamoDB is throttling. Slow tools are better queued (Prefer: respond-async).',
      { periods: 3 },
    );
    alarm(
      'LateOutcomes',
      ledger(LEDGER_METRICS.lateOutcomes, 'Sum'),
      1,
      'A worker reported an outcome for an attempt that had been superseded: an effect may have happened twice; check late_outcome on the record.',
    );
    alarm(
      'ReconciliationLatency',
      ledger(LEDGER_METRICS.reconciliationLatency, 'p90'),
      props.reconciliationLatencyThreshold.toMilliseconds(),
      'Uncertain operations take too long to be decided: targets answer unknown, or the reconciler is failing.',
      { periods: 3 },
    );
    // One period of three schedule intervals (at least 10 minutes, so a late tick is no page) with no
    // invocation at all: the description states the window the alarm actually measures.
    const stalledMinutes = Math.max(10, props.reconcileInterval.toMinutes() * 3);
    alarm(
      'ReconcilerStalled',
      props.functions.reconciler.fn.metricInvocations({
        period: Duration.minutes(stalledMinutes),
        statistic: 'Sum',
      }),
      1,
      `The reconciler has not been invoked in the last ${stalledMinutes} minutes (three schedule intervals, and at least 10 minutes): uncertain operations are not being decided. Check the schedule rule and the reconciler's errors.`,
      { below: true, missing: TreatMissingData.BREACHING },
    );
    for (const [name, { fn, timeout }] of Object.entries(props.functions)) {
      const label = capitalize(name);
      alarm(
        `${label}NearTimeout`,
        fn.metricDuration({ period: five, statistic: 'Maximum' }),
        Math.floor(timeout.toMilliseconds() * NEAR_TIMEOUT_SHARE),
        `The ${name} handler ran for ${NEAR_TIMEOUT_SHARE * 100}% of its ${timeout.toSeconds()} s timeout: the next slow invocation is cut off mid-work (leases expire, passes stop early). Reconciler passes end by ${PASS_TIME_SHARE * 100}% however busy, so this is a slow dependency, not a backlog: find it in the handler's logs.`,
      );
      alarm(
        `${label}Errors`,
        fn.metricErrors({ period: five, statistic: 'Sum' }),
        props.handlerErrorThreshold,
        `The ${name} handler threw or timed out in two of the last three 5-minute periods. Handlers map every known failure to a response, so this is a bug or a timeout that keeps happening (a single one does not page).`,
        // One error (a cold start racing a deploy, one network blip) is not a page; a recurring one is.
        { periods: 3, datapoints: 2 },
      );
      alarm(
        `${label}Throttles`,
        fn.metricThrottles({ period: five, statistic: 'Sum' }),
        1,
        `The ${name} handler was throttled: raise its reserved concurrency or the account limit.`,
      );
    }
    // DynamoDB throttling of the table and of each index: on demand still throttles a hot partition,
    // and a throttled index throttles the table writes that feed it. The SDK retries, so one event is
    // not a page; throttling in two of three periods is. DynamoDB emits these metrics only when there
    // are events, so missing data means none (not breaching, deliberately).
    const throttles = (label: string, dimensions: Record<string, string>) =>
      new MathExpression({
        expression: 'reads + writes',
        label,
        period: five,
        usingMetrics: {
          reads: new Metric({
            namespace: 'AWS/DynamoDB',
            metricName: 'ReadThrottleEvents',
            statistic: 'Sum',
            period: five,
            dimensionsMap: dimensions,
          }),
          writes: new Metric({
            namespace: 'AWS/DynamoDB',
            metricName: 'WriteThrottleEvents',
            statistic: 'Sum',
            period: five,
            dimensionsMap: dimensions,
          }),
        },
      });
    const throttleAlarms: [string, IMetric][] = [
      ['TableThrottles', throttles('table throttle events', { TableName: props.tableName })],
      ...LEDGER_INDEXES.map(
        (index) =>
          [
            `${capitalize(index.name)}IndexThrottles`,
            throttles(`${index.name} index throttle events`, {
              TableName: props.tableName,
              GlobalSecondaryIndexName: index.name,
            }),
          ] as [string, IMetric],
      ),
    ];
    for (const [name, metric] of throttleAlarms) {
      alarm(
        name,
        metric,
        props.tableThrottleThreshold,
        `DynamoDB throttled reads or writes of the ledger ${name === 'TableThrottles' ? 'table' : `table's ${name.replace('IndexThrottles', '').toLowerCase()} index`} in two of the last three 5-minute periods: requests fail as 503 ledger_unavailable once the SDK's retries are spent. Check the hot partition (the declared throughput and the shard counts) and the account's table quotas.`,
        { periods: 3, datapoints: 2, missing: TreatMissingData.NOT_BREACHING },
      );
    }
    this.alarms = alarms;

    // One line per value of the extra dimensions; the schema must list the exact dimension set emitted.
    const search = (metricName: string, dimensions: readonly string[], statistic: string, label: string) =>
      new MathExpression({
        expression:
          `SEARCH('{${[METRICS_NAMESPACE, ...dimensions, 'service'].join(',')}} service="${props.serviceName}" ` +
          `MetricName="${metricName}"', '${statistic}', ${five.toSeconds()})`,
        usingMetrics: {},
        label,
        period: five,
      });
    const fns = Object.entries(props.functions).map(([name, handler]) => [name, handler.fn] as const);
    this.dashboard = new Dashboard(this, 'Dashboard', {
      widgets: [
        [new AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(alarms), width: 24 })],
        [
          new GraphWidget({
            title: 'API requests and errors',
            left: [
              props.api.metricCount({ period: five }),
              props.api.metricClientError({ period: five }),
              props.api.metricServerError({ period: five }),
            ],
            width: 12,
          }),
          new GraphWidget({
            title: 'API latency',
            left: ['p50', 'p99'].map((statistic) => props.api.metricLatency({ period: five, statistic })),
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'Ledger outcomes',
            left: [
              LEDGER_METRICS.firstExecutions,
              LEDGER_METRICS.replays,
              LEDGER_METRICS.conflicts,
              LEDGER_METRICS.inProgressRejections,
              LEDGER_METRICS.uncertainOutcomes,
              LEDGER_METRICS.lateOutcomes,
            ].map((name) => ledger(name, 'Sum')),
            width: 12,
          }),
          new GraphWidget({
            title: 'First executions by tool',
            left: [search(LEDGER_METRICS.firstExecutions, ['tool'], 'Sum', 'FirstExecutions')],
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'Reconciliations by outcome and tool',
            left: [search(LEDGER_METRICS.reconciliations, ['outcome', 'tool'], 'Sum', 'Reconciliations')],
            width: 8,
          }),
          new GraphWidget({
            title: 'Open unresolved and needs_reconciliation',
            left: [
              ledger(LEDGER_METRICS.openUnresolved, 'Maximum'),
              ledger(LEDGER_METRICS.openNeedsReconciliation, 'Maximum'),
              ledger(LEDGER_METRICS.unresolvedOperations, 'Maximum'),
            ],
            width: 8,
          }),
          new GraphWidget({
            title: 'Reconciliation latency (ms)',
            left: ['p50', 'p90', 'Maximum'].map((statistic) =>
              ledger(LEDGER_METRICS.reconciliationLatency, statistic),
            ),
            width: 8,
          }),
        ],
        [
          new GraphWidget({
            title: 'Work queue',
            left: [
              props.queue.metricApproximateNumberOfMessagesVisible({ period: five, statistic: 'Maximum' }),
              props.queue.metricApproximateNumberOfMessagesNotVisible({ period: five, statistic: 'Maximum' }),
            ],
            right: [props.queue.metricApproximateAgeOfOldestMessage({ period: five, statistic: 'Maximum' })],
            width: 12,
          }),
          new GraphWidget({
            title: 'Dead-letter queue',
            left: [
              props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
                period: five,
                statistic: 'Maximum',
              }),
            ],
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'Handler errors and throttles',
            left: fns.map(([name, fn]) =>
              fn.metricErrors({ period: five, statistic: 'Sum', label: `${name} errors` }),
            ),
            right: fns.map(([name, fn]) =>
              fn.metricThrottles({ period: five, statistic: 'Sum', label: `${name} throttles` }),
            ),
            width: 12,
          }),
          new GraphWidget({
            title: 'Handler duration p99 (ms)',
            left: fns.map(([name, fn]) => fn.metricDuration({ period: five, statistic: 'p99', label: name })),
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'Reconciler passes: incomplete (1) and pass duration (ms)',
            left: [ledger(LEDGER_METRICS.incompletePasses, 'Maximum')],
            right: ['p50', 'Maximum'].map((statistic) =>
              props.functions.reconciler.fn.metricDuration({
                period: five,
                statistic,
                label: `pass ${statistic}`,
              }),
            ),
            leftYAxis: { min: 0, max: 1 },
            width: 8,
          }),
          new GraphWidget({
            title: 'DynamoDB throttle events',
            // One line for the table and one per index; each expression names its own metrics.
            left: [
              { label: 'table', dimensions: { TableName: props.tableName } },
              ...LEDGER_INDEXES.map((index) => ({
                label: index.name,
                dimensions: { TableName: props.tableName, GlobalSecondaryIndexName: index.name },
              })),
            ].map(({ label, dimensions }, n) => {
              const metric = (metricName: string) =>
                new Metric({
                  namespace: 'AWS/DynamoDB',
                  metricName,
                  statistic: 'Sum',
                  period: five,
                  dimensionsMap: dimensions,
                });
              return new MathExpression({
                expression: `r${n} + w${n}`,
                label,
                period: five,
                usingMetrics: {
                  [`r${n}`]: metric('ReadThrottleEvents'),
                  [`w${n}`]: metric('WriteThrottleEvents'),
                },
              });
            }),
            width: 8,
          }),
          new GraphWidget({
            title: 'Completion events: stream age (ms) and errors',
            left:
              props.eventsFunction === undefined
                ? []
                : [
                    new Metric({
                      namespace: 'AWS/Lambda',
                      metricName: 'IteratorAge',
                      dimensionsMap: { FunctionName: props.eventsFunction.functionName },
                      statistic: 'Maximum',
                      period: five,
                    }),
                  ],
            right:
              props.eventsFunction === undefined
                ? []
                : [
                    props.eventsFunction.metricErrors({
                      period: five,
                      statistic: 'Sum',
                      label: 'events errors',
                    }),
                  ],
            width: 8,
          }),
        ],
        ...perTenantRows(props.tenants ?? [], props.transitionLogGroups ?? []),
      ],
    });
  }
}

/**
 * The per-tenant views: Logs Insights tables over the transition lines (which carry the tenant), not
 * metrics, so that no metric gets a tenant dimension and the number of series stays what it is. Three
 * widgets whatever the number of tenants, each naming at most {@link MAX_DASHBOARD_TENANTS} of them.
 */
export function perTenantRows(
  tenants: readonly string[],
  logGroups: readonly ILogGroup[],
): LogQueryWidget[][] {
  if (tenants.length === 0 || logGroups.length === 0) return [];
  const shown = [...tenants].sort().slice(0, MAX_DASHBOARD_TENANTS);
  const more = tenants.length - shown.length;
  const suffix = more > 0 ? ` (first ${shown.length} tenants by name; ${more} more in the logs)` : '';
  const quoted = (values: readonly string[]) => `[${values.map((v) => JSON.stringify(v)).join(', ')}]`;
  const lines = `filter message = ${JSON.stringify(TRANSITION_LOG_MESSAGE)} and tenant in ${quoted(shown)}`;
  const unresolved = STATES.filter((state) => !TERMINAL_STATES.has(state));
  const widget = (title: string, queryLines: string[]) =>
    new LogQueryWidget({
      title: `${title}${suffix}`,
      logGroupNames: logGroups.map((group) => group.logGroupName),
      queryLines: [lines, ...queryLines],
      view: LogQueryVisualizationType.TABLE,
      width: 8,
    });
  return [
    [
      widget('Per tenant: first executions', [
        'filter state_before = "pending" and attempt_number = 1 and state_after != "pending"',
        'stats count(*) as first_executions by tenant',
        'sort tenant asc',
      ]),
      widget('Per tenant: uncertain, waiting for a person (transitions into)', [
        'filter state_before != state_after',
        'filter state_after in ["uncertain", "needs_reconciliation", "awaiting_approval"]',
        'stats count(*) as transitions by tenant, state_after',
        'sort tenant asc',
      ]),
      widget('Per tenant: unresolved backlog by state (last transition in the time range)', [
        'filter state_before != state_after',
        'stats latest(state_after) as state by tenant, operation_id',
        `filter state in ${quoted(unresolved)}`,
        'stats count(*) as operations by tenant, state',
        'sort tenant asc',
      ]),
    ],
  ];
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
