import { S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { buildApp } from 'fauxqs';
import { guardServer, sendAwsRefusal } from './loopback-guard';

/**
 * SQS for local mode: fauxqs in-process. `startFauxqs` always listens on every interface, so this
 * builds fauxqs's app and listens on 127.0.0.1 only. fauxqs keeps queues in memory: local mode
 * creates the work queue and its DLQ at every start. Its queue URLs name the host
 * `sqs.us-east-1.localhost`, which does not resolve, so every client must be given the endpoint. Like
 * every local server it answers only requests that name this machine (loopback-guard.ts).
 */

/** A running local SQS. */
export interface LocalSqs {
  /** `http://127.0.0.1:<port>`: the `endpoint` every SQS client must be given. */
  endpoint: string;
  /** A client for this server. */
  client: SQSClient;
  /** What a queue holds now (fauxqs's inspection route; nothing moves). */
  messages(queueName: string): Promise<QueueMessages>;
  /** Stops the server; pending long polls end with an error. */
  stop(): Promise<void>;
}

/** One message as fauxqs's inspection reports it. */
export interface InspectedMessage {
  body: string;
  /** Epoch ms before which a delayed message is invisible. */
  delayUntil?: number;
}

/** A queue's messages, by where they are. */
export interface QueueMessages {
  ready: InspectedMessage[];
  delayed: InspectedMessage[];
  inflight: InspectedMessage[];
}

/** The work queue and its dead-letter queue. */
export interface LocalWorkQueues {
  queueUrl: string;
  queueArn: string;
  deadLetterQueueUrl: string;
}

/** How the work queue is configured (the contract, §6). */
export interface WorkQueueOptions {
  /** Name of the work queue; the DLQ is `<name>-dlq`. */
  name: string;
  /** At least six times the executor's timeout, seconds. */
  visibilityTimeoutSeconds: number;
  /** Receives before a message moves to the DLQ. */
  maxReceiveCount: number;
}

/**
 * Starts fauxqs on `127.0.0.1:port` (0: a free port).
 *
 * @example
 * ```ts
 * const sqs = await startLocalSqs(0);
 * const queues = await createWorkQueues(sqs.client, { name: 'tool-ledger-work', visibilityTimeoutSeconds: 720, maxReceiveCount: 5 });
 * ```
 */
export async function startLocalSqs(port: number, options: LocalSqsOptions = {}): Promise<LocalSqs> {
  const app = buildApp({
    logger: false,
    ...(options.objectsDir === undefined ? {} : { stores: await storesWithObjectsIn(options.objectsDir) }),
  });
  let listening = 0;
  guardServer(
    app.server,
    () => listening,
    (res, refusal) => sendAwsRefusal(res, 'com.amazonaws.sqs#AccessDenied', refusal),
  );
  await app.listen({ port, host: '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('fauxqs did not report a TCP address');
  listening = address.port;
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = localSqsClient(endpoint);
  return {
    endpoint,
    client,
    async messages(queueName) {
      // In-process (fastify's inject), so the loopback guard of the listening socket is not involved.
      const res = await app.inject({
        method: 'GET',
        url: `/_fauxqs/queues/${encodeURIComponent(queueName)}`,
      });
      if (res.statusCode !== 200)
        throw new Error(`local SQS cannot list queue ${queueName} (${res.statusCode})`);
      const state = res.json() as {
        messages: {
          ready: InspectedMessage[];
          delayed: InspectedMessage[];
          inflight: { message: InspectedMessage }[];
        };
      };
      return {
        ready: state.messages.ready,
        delayed: state.messages.delayed,
        inflight: state.messages.inflight.map((entry) => entry.message),
      };
    },
    async stop() {
      client.destroy();
      await app.close();
    },
  };
}

/** Options of {@link startLocalSqs}. */
export interface LocalSqsOptions {
  /**
   * Keep S3 objects as files in this folder, written through on every put and loaded at start, so
   * the results local mode keeps by reference survive a restart and a crash alike. Absent: in memory.
   */
  objectsDir?: string;
}

/** fauxqs's stores, as its `buildApp` takes them. */
type FauxqsStores = NonNullable<NonNullable<Parameters<typeof buildApp>[0]>['stores']>;

/**
 * fauxqs's stores with its file-backed S3 persistence, wired as its own `startFauxqs` wires them.
 * `startFauxqs` offers the option but always listens on every interface, and local mode listens on
 * 127.0.0.1 behind its loopback guard; so its classes are loaded from the package's files (fauxqs is
 * pinned to an exact version; test/local/result-objects.test.ts proves a restart keeps an object).
 */
async function storesWithObjectsIn(dir: string): Promise<FauxqsStores> {
  const app = import.meta.resolve('fauxqs');
  const load = (path: string) => import(new URL(path, app).href);
  const [{ SqsStore }, { SnsStore }, { S3Store }, { FileS3Persistence }] = await Promise.all([
    load('./sqs/sqsStore.js'),
    load('./sns/snsStore.js'),
    load('./s3/s3Store.js'),
    load('./s3/fileS3Persistence.js'),
  ]);
  const s3Store = new S3Store();
  const persistence = new FileS3Persistence(dir);
  // Loaded before persistence is attached, so loading writes nothing back.
  persistence.loadS3(s3Store);
  s3Store.persistence = persistence;
  return { sqsStore: new SqsStore(), snsStore: new SnsStore(), s3Store } as FauxqsStores;
}

/** An SQS client for a local endpoint (any credentials are accepted). */
export function localSqsClient(endpoint: string): SQSClient {
  return new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** An S3 client for a local endpoint: path-style, since bucket host names do not resolve locally. */
export function localS3Client(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/**
 * Creates (or finds, CreateQueue is idempotent for equal attributes) the work queue and its DLQ with
 * the redrive policy.
 */
export async function createWorkQueues(
  client: SQSClient,
  options: WorkQueueOptions,
): Promise<LocalWorkQueues> {
  const dlq = await client.send(new CreateQueueCommand({ QueueName: `${options.name}-dlq` }));
  const deadLetterQueueUrl = required(dlq.QueueUrl, 'dead-letter queue URL');
  const dlqArn = await queueArn(client, deadLetterQueueUrl);
  const work = await client.send(
    new CreateQueueCommand({
      QueueName: options.name,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds),
        ReceiveMessageWaitTimeSeconds: '20',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: options.maxReceiveCount,
        }),
      },
    }),
  );
  const queueUrl = required(work.QueueUrl, 'work queue URL');
  return { queueUrl, queueArn: await queueArn(client, queueUrl), deadLetterQueueUrl };
}

async function queueArn(client: SQSClient, queueUrl: string): Promise<string> {
  const attributes = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return required(attributes.Attributes?.QueueArn, 'queue ARN');
}

function required(value: string | undefined, what: string): string {
  if (!value) throw new Error(`local SQS returned no ${what}`);
  return value;
}
