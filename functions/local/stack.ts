import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { SETTINGS } from '../contract/environment';
import { workMessageFor } from '../engine/stored-call';
import { SqsEventSink } from '../events/sqs-event-sink';
import { sendUnsentEvents } from '../events/unsent-events';
import { LedgerStore } from '../ledger/ledger-store';
import { logger } from '../observability/logger';
import { SqsWorkQueue } from '../queue/sqs-work-queue';
import type { ToolRegistry } from '../tools/registry';
import { DataFolderInUseError, lockDataFolder, lockHolder } from './data-folder-lock';
import { type LocalDynamo, startLocalDynamo } from './dynamo-server';
import { ExecutorLoop } from './executor-loop';
import { HttpAdapter } from './http-adapter';
import { LedgerLockedError, type RepairReport, repairIndexes } from './index-repair';
import type { LocalFunction } from './lambda-context';
import { keepQueue, keptQueueFile, restoreQueue } from './queue-keeper';
import { ReconcilerLoop } from './reconciler-loop';
import type { LocalSettings } from './settings';
import {
  createWorkQueues,
  type LocalSqs,
  type LocalWorkQueues,
  localS3Client,
  startLocalSqs,
} from './sqs-server';

/**
 * The whole of tool-ledger on one machine (the contract, §10): dynalite and fauxqs, then the same three Lambda
 * handlers behind an HTTP server, an SQS poller and a timer. Servers start first; the handler modules
 * are imported only once the environment they read at their cold start points at those servers.
 *
 * Before anything listens: the data folder's lock is taken (one process per folder), the ledger's
 * indexes are checked and repaired (a `kill -9` can leave them out of step with the records), and
 * the work messages of `queued` records, lost with the in-memory queue, are sent again.
 */

/** The API function: API Gateway's integration timeout bounds it. */
export const API_FUNCTION: LocalFunction = { name: 'tool-ledger-api', timeoutMs: 29_000 };

/** The executor function, with the construct's default timeout (lib/settings.ts `executorTimeout`). */
export const EXECUTOR_FUNCTION: LocalFunction = { name: 'tool-ledger-executor', timeoutMs: 120_000 };

/** Receives before a work message moves to the DLQ (the construct's default `maxReceiveCount`). */
export const MAX_RECEIVE_COUNT = 5;

/** Name of the local events queue (completion events). */
export const EVENTS_QUEUE_NAME = 'tool-ledger-events';

/** Name of the local work queue (its DLQ is `<name>-dlq`). */
export const WORK_QUEUE_NAME = 'tool-ledger-work';

/** Name of the local bucket whole results are kept in (engine/payloads.ts), on the data folder. */
export const RESULTS_BUCKET_NAME = 'tool-ledger-results';

/** The folder of the data folder that holds the local bucket's objects, as files. */
export function objectsDir(dataDir: string): string {
  return join(dataDir, 'objects');
}

/** The reconciler function: at least a minute, so a pass that asks slow targets is not cut short. */
export function reconcilerFunction(everyMs: number): LocalFunction {
  return { name: 'tool-ledger-reconciler', timeoutMs: Math.min(Math.max(everyMs, 60_000), 900_000) };
}

/** Where a running stack can be reached. */
export interface RunningStack {
  /** The local events queue: one message per completion event. */
  eventsQueueUrl: string;
  apiUrl: string;
  sqsEndpoint: string;
  dynamoEndpoint: string;
  queues: LocalWorkQueues;
  tableName: string;
  /** What the start-up check of the indexes found and repaired. */
  repair: Omit<RepairReport, 'queued'> & { requeued: number };
  /** The deployment's tools, as built at start (the handlers build the same list). */
  tools: ToolRegistry;
  /**
   * Settles if the local DynamoDB's thread ends without a stop: nothing can be recorded any more, and
   * `npm start` exits 1 rather than answer `ledger_unavailable` to every call.
   */
  storeLost: Promise<Error>;
  /**
   * Stops the loops and the HTTP server, waiting for work in flight at most `graceMs`, then the
   * emulators. Returns false if some work was abandoned.
   */
  stop(graceMs: number): Promise<boolean>;
}

/**
 * The environment the handlers read (functions/wiring.ts, functions/config.ts and the API's token
 * authentication). Values the user set are kept where the variable is theirs to set.
 */
export function handlerEnvironment(
  settings: LocalSettings,
  endpoints: {
    dynamo: string;
    sqs: string;
    queueUrl: string;
    eventsQueueUrl?: string | undefined;
    /** The local S3 (the same fauxqs) and its results bucket. */
    resultsBucket?: string | undefined;
  },
  env: NodeJS.ProcessEnv,
): Record<string, string> {
  return {
    [SETTINGS.local.name]: 'true',
    [SETTINGS.auth.name]: 'tokens',
    [SETTINGS.tokens.name]: settings.tokensSpec,
    [SETTINGS.webhookAllow.name]: settings.webhookAllow,
    [SETTINGS.dataDir.name]: settings.dataDir,
    [SETTINGS.workspaceDir.name]: settings.workspaceDir,
    [SETTINGS.dynamoEndpoint.name]: endpoints.dynamo,
    [SETTINGS.sqsEndpoint.name]: endpoints.sqs,
    [SETTINGS.tableName.name]: settings.tableName,
    [SETTINGS.queueUrl.name]: endpoints.queueUrl,
    ...(endpoints.eventsQueueUrl === undefined
      ? {}
      : { [SETTINGS.eventsQueueUrl.name]: endpoints.eventsQueueUrl }),
    ...(endpoints.resultsBucket === undefined
      ? {}
      : {
          [SETTINGS.s3Endpoint.name]: endpoints.sqs,
          [SETTINGS.resultsBucket.name]: endpoints.resultsBucket,
        }),
    [SETTINGS.queueTenants.name]: JSON.stringify(settings.tenants),
    AWS_REGION: env.AWS_REGION ?? 'us-east-1',
    // EMF lines on stdout are CloudWatch's input format, noise in a terminal: off unless asked for.
    [SETTINGS.metricsDisabled.name]: env[SETTINGS.metricsDisabled.name] ?? 'true',
  };
}

/**
 * Starts the emulators, creates the table and queues, sets `process.env` for the handlers, imports
 * them, builds the tools once (a factory that fails stops the start: `LocalSettingsError` naming
 * `toolsModule`, the resolved `TOOL_LEDGER_TOOLS_MODULE`, if any), and starts the HTTP server and both
 * loops.
 *
 * @example
 * ```ts
 * const stack = await startStack(loadLocalSettings(process.env));
 * console.log(stack.apiUrl);
 * await stack.stop(30_000);
 * ```
 */
export async function startStack(settings: LocalSettings, toolsModule?: string): Promise<RunningStack> {
  const started: { stop(): Promise<unknown> }[] = [];
  const stopStarted = async () => {
    for (const part of started.reverse()) await part.stop().catch(() => undefined);
  };
  try {
    await mkdir(settings.workspaceDir, { recursive: true, mode: 0o700 });
    await mkdir(settings.ledgerDir, { recursive: true, mode: 0o700 });
    // The ledger holds arguments and results, the workspace the files tools wrote: the data folder and
    // its two folders are the user's alone, whatever the umask or an older start made them.
    for (const folder of [settings.dataDir, settings.ledgerDir, settings.workspaceDir])
      await chmod(folder, 0o700);
    const lock = await lockDataFolder(settings.dataDir);
    started.push({ stop: () => lock.release() });
    const repair = await repairLedger(settings);
    const dynamo: LocalDynamo = await startLocalDynamo({
      path: settings.ledgerDir,
      port: settings.dynamoPort,
      tableName: settings.tableName,
      guardFolders: [settings.dataDir, settings.ledgerDir],
    });
    started.push(dynamo);
    // Whole results kept by reference: fauxqs's S3, its objects written through to files in the data
    // folder (the user's alone, as the ledger's folder is).
    await mkdir(objectsDir(settings.dataDir), { recursive: true, mode: 0o700 });
    await chmod(objectsDir(settings.dataDir), 0o700);
    const sqs: LocalSqs = await startLocalSqs(settings.sqsPort, { objectsDir: objectsDir(settings.dataDir) });
    started.push(sqs);
    await ensureBucket(sqs.endpoint, RESULTS_BUCKET_NAME);
    const queues = await createWorkQueues(sqs.client, {
      name: WORK_QUEUE_NAME,
      visibilityTimeoutSeconds: (6 * EXECUTOR_FUNCTION.timeoutMs) / 1000,
      maxReceiveCount: MAX_RECEIVE_COUNT,
    });
    // Completion events: the same JSON as on AWS, on a queue a test or a user reads.
    const { QueueUrl: eventsQueueUrl } = await sqs.client.send(
      new CreateQueueCommand({ QueueName: EVENTS_QUEUE_NAME }),
    );
    // Events written with their transition and never sent (a crash between the write and the send):
    // sent now, with the IDs they were written with (at least once, as the stream does on AWS).
    const resentEvents = await resendUnsentEvents(dynamo.endpoint, settings.tableName, sqs, eventsQueueUrl);
    // A second message for an operation is harmless (the claim is conditional); a missing one would
    // leave the operation waiting for the reconciler's stale-queued pass.
    const work = new SqsWorkQueue(sqs.client, queues.queueUrl);
    const resentAt = Date.now();
    for (const record of repair.queued) await work.enqueue(workMessageFor(record, resentAt));
    // What the queues held at the last clean stop (queue-keeper.ts): accepted work is never lost.
    const restored =
      (await restoreQueue(sqs.client, queues.queueUrl, keptQueueFile(settings.dataDir, WORK_QUEUE_NAME))) +
      (await restoreQueue(
        sqs.client,
        queues.deadLetterQueueUrl,
        keptQueueFile(settings.dataDir, `${WORK_QUEUE_NAME}-dlq`),
      ));
    const { queued, ...found } = repair;
    logger.info('ledger indexes checked', {
      records: found.records,
      unresolved: found.unresolved,
      missing: found.missing,
      stale: found.stale,
      orphaned: found.orphaned,
      requeued: queued.length,
      restored_messages: restored,
      resent_events: resentEvents,
      duration_ms: Math.round(found.durationMs),
    });
    Object.assign(
      process.env,
      handlerEnvironment(
        settings,
        {
          dynamo: dynamo.endpoint,
          sqs: sqs.endpoint,
          queueUrl: queues.queueUrl,
          eventsQueueUrl,
          resultsBucket: RESULTS_BUCKET_NAME,
        },
        process.env,
      ),
    );
    const [api, executor, reconciler, { buildStartTools }] = await Promise.all([
      import('../handlers/api'),
      import('../handlers/executor'),
      import('../handlers/reconciler'),
      import('./start-tools'),
    ]);
    const http = new HttpAdapter(api.handler, API_FUNCTION);
    const port = await http.listen(settings.port);
    // Before the first invocation builds the runtime: webhook.post must never reach the API itself,
    // nor what the user reserved (added to, never replaced).
    process.env[SETTINGS.reservedEndpoints.name] = withEndpoint(
      process.env[SETTINGS.reservedEndpoints.name],
      `http://127.0.0.1:${port}`,
    );
    started.push({ stop: () => http.close(0) });
    // Before the loops run the handlers: a tools module that cannot build its list is a refusal to start.
    const tools = buildStartTools(process.env, toolsModule);
    // One loop per concurrent executor invocation, as the event source keeps that many running: a
    // slow tool holds up its own batch, not every queued call.
    const executorLoops = Array.from(
      { length: settings.executorConcurrency },
      () =>
        new ExecutorLoop({
          client: sqs.client,
          queueUrl: queues.queueUrl,
          queueArn: queues.queueArn,
          handler: executor.handler,
          fn: EXECUTOR_FUNCTION,
        }),
    );
    const reconcilerLoop = new ReconcilerLoop(
      reconciler.handler,
      reconcilerFunction(settings.reconcileEveryMs),
      settings.reconcileEveryMs,
    );
    for (const loop of executorLoops) loop.start();
    reconcilerLoop.start();
    return {
      apiUrl: `http://127.0.0.1:${port}`,
      sqsEndpoint: sqs.endpoint,
      dynamoEndpoint: dynamo.endpoint,
      queues,
      eventsQueueUrl: eventsQueueUrl ?? '',
      tableName: settings.tableName,
      repair: { ...found, requeued: queued.length },
      tools,
      storeLost: dynamo.lost,
      async stop(graceMs) {
        // New work stops first; then what is running may finish (it commits to the ledger, which is
        // still up); the emulators go last.
        const results = await Promise.all([
          http.close(graceMs),
          ...executorLoops.map((loop) => loop.stop(graceMs)),
          reconcilerLoop.stop(graceMs),
        ]);
        // Nothing polls the queues any more: what they still hold is kept for the next start.
        const kept = await keepAll(sqs, settings.dataDir).catch((error: unknown) => {
          logger.error('local queues not kept', {
            error_class: error instanceof Error ? error.name : 'error',
          });
          return -1;
        });
        if (kept > 0) logger.info('local queues kept', { messages: kept });
        await sqs.stop();
        await dynamo.stop();
        await lock.release();
        return results.every(Boolean);
      },
    };
  } catch (error) {
    await stopStarted();
    throw error;
  }
}

/** Sends the completion events the ledger's records still hold to the local events queue. */
async function resendUnsentEvents(
  endpoint: string,
  tableName: string,
  sqs: LocalSqs,
  eventsQueueUrl: string | undefined,
): Promise<number> {
  if (eventsQueueUrl === undefined) return 0;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    return await sendUnsentEvents(
      new LedgerStore({ client, tableName }),
      new SqsEventSink(sqs.client, eventsQueueUrl),
    );
  } finally {
    client.destroy();
  }
}

/** Creates the local results bucket unless a previous start made it (its objects are on disk). */
async function ensureBucket(endpoint: string, bucket: string): Promise<void> {
  const client = localS3Client(endpoint);
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}

/** Keeps the work queue and its DLQ in the data folder; returns how many messages were kept. */
async function keepAll(sqs: LocalSqs, dataDir: string): Promise<number> {
  let kept = 0;
  for (const name of [WORK_QUEUE_NAME, `${WORK_QUEUE_NAME}-dlq`]) {
    kept += await keepQueue(await sqs.messages(name), keptQueueFile(dataDir, name));
  }
  return kept;
}

/**
 * A comma-separated endpoint list with `endpoint` added at the end: the user's own entries stay.
 *
 * @example
 * ```ts
 * withEndpoint('http://10.0.0.5:9000', 'http://127.0.0.1:3000'); // 'http://10.0.0.5:9000,http://127.0.0.1:3000'
 * withEndpoint(undefined, 'http://127.0.0.1:3000'); // 'http://127.0.0.1:3000'
 * ```
 */
function withEndpoint(list: string | undefined, endpoint: string): string {
  return list === undefined || list.trim() === '' ? endpoint : `${list},${endpoint}`;
}

/**
 * Runs the index check while no dynalite holds the folder. LevelDB's own lock refusing the open means
 * another process has it after all (it took the lock between this one's look and its takeover).
 */
async function repairLedger(settings: LocalSettings): Promise<RepairReport> {
  try {
    return await repairIndexes(settings.ledgerDir, settings.tableName);
  } catch (error) {
    if (!(error instanceof LedgerLockedError)) throw error;
    const holder = await lockHolder(settings.dataDir);
    throw new DataFolderInUseError(settings.dataDir, holder === process.pid ? undefined : holder);
  }
}
