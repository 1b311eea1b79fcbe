import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { ReconcileSummary } from '../../functions/engine/reconcile';
import type { WorkMessage } from '../../functions/engine/work-queue';
import { createApiHandler } from '../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { logTransition, type TransitionLogLine } from '../../functions/observability/transition-log';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { createReconcilerHandler } from '../../functions/reconciler/reconciler-handler';
import type { ToolFactory } from '../../functions/tools/registry';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { sqsRecord } from '../fuzz/executor-harness';
import { parse, type TestRequest, type TestResponse, TOKENS, toEvent } from '../http/support';
import { type DynaliteHandle, freshTable } from '../support/dynalite';
import { MemoryQueue } from '../support/harness';

/**
 * tool-ledger as deployed, in one process: the three Lambda handlers (API, executor, reconciler)
 * built from the environment by buildRuntime over a dynalite table, with production sinks (the
 * Powertools logger for transition lines, EMF metrics). Only two things are test doubles: the work
 * queue keeps messages in memory until {@link World.deliver} hands them to the executor as an SQS
 * batch, and the clock can be moved forward so that leases, backoffs and deadlines pass.
 */
export interface World {
  runtime: Runtime;
  /** The dynalite client and the world's table, for a test that writes an item as an older version would. */
  db: DynamoDBClient;
  table: string;
  /** Every transition line, also written through the real logger. */
  transitions: TransitionLogLine[];
  queue: MemoryQueue;
  /** One HTTP request through the API handler (tokens of test/http/support.ts). */
  call(request: TestRequest): Promise<TestResponse>;
  /** The API handler with a prepared event (for events toEvent cannot build). */
  callEvent(event: APIGatewayProxyEvent): Promise<TestResponse>;
  /** Delivers every queued message (plus `extra` raw bodies) as one SQS batch; returns failed IDs. */
  deliver(extra?: string[]): Promise<string[]>;
  /** One reconciler invocation. */
  reconcile(): Promise<ReconcileSummary>;
  /** Moves the ledger's clock forward. */
  advance(ms: number): void;
}

function context(): Context {
  return {
    awsRequestId: randomUUID(),
    functionName: 'world',
    getRemainingTimeInMillis: () => 60_000,
  } as unknown as Context;
}

/**
 * Builds a world on a fresh table of `db`. `env` adds to the environment buildRuntime reads (e.g.
 * `TOOL_LEDGER_WEBHOOK_ALLOW`, `TOOL_LEDGER_RETRY_BASE_MS`); the queue is bound to tenant `acme`.
 */
export async function startWorld(
  db: DynaliteHandle,
  factory: ToolFactory,
  env: Record<string, string> = {},
): Promise<World> {
  const table = await freshTable(db.client);
  const runtime = buildRuntime(factory, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: table,
    TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
    ...env,
  });
  let offset = 0;
  const transitions: TransitionLogLine[] = [];
  const queue = new MemoryQueue();
  runtime.deps.queue = queue;
  runtime.deps.clock = () => Date.now() + offset;
  runtime.deps.log = (line) => {
    transitions.push(line);
    logTransition(line);
  };
  const api = createApiHandler(runtime, new BearerTokenAuthenticator(TOKENS));
  const executor = createExecutorHandler(() => runtime);
  const reconciler = createReconcilerHandler(() => runtime);
  let delivered = 0;
  return {
    runtime,
    db: db.client,
    table,
    transitions,
    queue,
    call: async (request) => parse(await api(toEvent(request), context())),
    callEvent: async (event) => parse(await api(event, context())),
    async deliver(extra = []) {
      const bodies = [...queue.messages.splice(0).map((m: WorkMessage) => JSON.stringify(m)), ...extra];
      if (bodies.length === 0) return [];
      const records = bodies.map((body) => {
        delivered += 1;
        return sqsRecord(body, `msg-${delivered}`);
      });
      const response = await executor({ Records: records }, context());
      return response.batchItemFailures.map((f) => f.itemIdentifier);
    },
    reconcile: () => reconciler({}, context()),
    advance(ms) {
      offset += ms;
    },
  };
}
