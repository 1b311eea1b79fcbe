import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { SETTINGS } from '../../functions/contract/environment';
import { startLocalStack } from '../local-stack';
import { median, p99 } from './stats';

/** One side of the throughput comparison. */
export interface ThroughputSide {
  /** Operations completed in the measured rounds. */
  operations: number;
  /** Wall time of the measured rounds, ms. */
  elapsedMs: number;
  /** Operations per second over the measured rounds. */
  perSecond: number;
  /** Latency of each operation, ms. */
  latencies: number[];
  p50: number;
  p99: number;
}

/** The local-mode throughput row. */
export interface LocalThroughput {
  concurrency: number;
  /** tool-ledger in local mode, end to end over HTTP (`POST /v1/operations`, synchronous, 201). */
  ledger: ThroughputSide;
  /** One conditional PutItem plus one conditional UpdateItem per operation on the same dynalite. */
  baseline: ThroughputSide;
  /** ledger operations/s ÷ baseline operations/s. */
  ratio: number;
}

const TOOLS_MODULE = fileURLToPath(new URL('./local-tools.ts', import.meta.url));

/**
 * Local mode under `concurrency` clients against what its own store can do, in one run: local mode
 * (`npm start`, as a child process, with its default logging, on a fresh data folder) serves
 * `POST /v1/operations` for the benchmark's trivial write tool, each call a new operation that runs
 * synchronously; the baseline is a bare AWS SDK client doing one conditional PutItem and one
 * conditional UpdateItem per operation on local mode's own dynalite (same process, same LevelDB
 * folder, same table, keys of their own that enter no index). The two sides alternate in rounds, so a
 * busy moment of the machine falls on both.
 */
export async function localThroughput(options: {
  operations: number;
  concurrency: number;
  rounds?: number;
}): Promise<LocalThroughput> {
  const { concurrency } = options;
  const rounds = options.rounds ?? 4;
  const perRound = Math.max(concurrency, Math.ceil(options.operations / rounds));
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-bench-local-'));
  const stack = await startLocalStack({
    dataDir,
    env: {
      [SETTINGS.toolsModule.name]: TOOLS_MODULE,
      // As a user runs it: transition lines logged (the benchmark silences its own process only).
      [SETTINGS.logLevel.name]: 'INFO',
      [SETTINGS.logFormat.name]: 'json',
    },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const dynamo = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const api = new URL(stack.api);
    const ledgerOp = (i: number) => submit(agent, api, stack.tokens.agent, `bench-local-${i}`, i);
    const baselineOp = (i: number) => putThenUpdate(dynamo, stack.table, `bench-baseline#${i}`, i);
    // Warm-up, not measured: connections, the handlers' first invocation, and one round's worth of
    // operations on each side, so that both run optimized code (the child process starts cold; the
    // benchmark's own process has run the SDK client all along).
    const warmUp = Math.max(4 * concurrency, perRound);
    await drive(ledgerOp, 0, warmUp, concurrency);
    await drive(baselineOp, 0, warmUp, concurrency);
    const ledger = emptySide();
    const baseline = emptySide();
    let next = warmUp;
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? (['ledger', 'baseline'] as const) : (['baseline', 'ledger'] as const);
      for (const side of order) {
        const out = await drive(side === 'ledger' ? ledgerOp : baselineOp, next, perRound, concurrency);
        next += perRound;
        const into = side === 'ledger' ? ledger : baseline;
        into.operations += perRound;
        into.elapsedMs += out.elapsedMs;
        into.latencies.push(...out.latencies);
      }
    }
    finish(ledger);
    finish(baseline);
    return { concurrency, ledger, baseline, ratio: ledger.perSecond / baseline.perSecond };
  } finally {
    dynamo.destroy();
    agent.destroy();
    await stack.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  }
}

function emptySide(): ThroughputSide {
  return { operations: 0, elapsedMs: 0, perSecond: 0, latencies: [], p50: 0, p99: 0 };
}

function finish(side: ThroughputSide): void {
  side.perSecond = side.operations / (side.elapsedMs / 1000);
  side.p50 = median(side.latencies);
  side.p99 = p99(side.latencies);
}

/** Runs operations `from … from+count-1` with `concurrency` at a time; each one's latency is kept. */
async function drive(
  op: (i: number) => Promise<void>,
  from: number,
  count: number,
  concurrency: number,
): Promise<{ elapsedMs: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = from;
  const end = from + count;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < end) {
        const i = next++;
        const t = performance.now();
        await op(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { elapsedMs: performance.now() - started, latencies };
}

/** One synchronous call through local mode's API; anything but 201 fails the benchmark. */
function submit(agent: Agent, api: URL, token: string, operationId: string, n: number): Promise<void> {
  const body = JSON.stringify({ tool: 'bench.effect', arguments: { target: 'bench', n } });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: api.hostname,
        port: api.port,
        method: 'POST',
        path: '/v1/operations',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'idempotency-key': `"${operationId}"`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (res.statusCode === 201) resolve();
          else
            reject(
              new Error(`local mode answered ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8')}`),
            );
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The bare store work of one operation: reserve with a conditional put, finish with a conditional update. */
async function putThenUpdate(client: DynamoDBClient, table: string, pk: string, n: number): Promise<void> {
  const now = new Date().toISOString();
  await client.send(
    new PutItemCommand({
      TableName: table,
      Item: {
        pk: { S: pk },
        sk: { S: 'op' },
        state: { S: 'pending' },
        arguments: { S: JSON.stringify({ target: 'bench', n }) },
        created_at: { S: now },
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  await client.send(
    new UpdateItemCommand({
      TableName: table,
      Key: { pk: { S: pk }, sk: { S: 'op' } },
      UpdateExpression: 'SET #state = :done, #result = :result, updated_at = :now',
      ConditionExpression: '#state = :pending',
      ExpressionAttributeNames: { '#state': 'state', '#result': 'result' },
      ExpressionAttributeValues: {
        ':done': { S: 'succeeded' },
        ':pending': { S: 'pending' },
        ':result': { S: JSON.stringify({ ok: true, n }) },
        ':now': { S: now },
      },
    }),
  );
}
