import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { bearerToken, type RunOutcome, ToolLedgerClient } from '../../client/index';
import { SETTINGS } from '../../functions/contract/environment';
import { startLocalStack } from '../local-stack';
import { runAb, type SideSamples } from './ab-runner';
import { type BenchArguments, benchArguments, EffectLog } from './bench-tools';
import { CallCounter, type CallTally, type TallySource } from './call-counter';
import { type BaselineCall, createPowertoolsTable, powertoolsFunction } from './powertools-baseline';
import type { ScenarioResult } from './scenarios';
import { tapUrlOf } from './tap-line';

/**
 * The `ledger.run` rows: one in-process function, made run-once two ways, side by side in one run.
 *
 * - `ledger.run` (the client, in the benchmark's process) against local mode (`npm start` as a child
 *   process): the ledger records the operation over HTTP, the function runs here.
 * - Powertools' `makeIdempotent` around the same function, on the same dynalite (local mode's own,
 *   over its loopback endpoint), with the SDK client Powertools builds.
 *
 * Round trips are counted where they are made: HTTP requests by the client's `fetch`; DynamoDB requests
 * by the same SDK middleware on both sides ({@link CallCounter}; in local mode through a preloaded tap,
 * dynamo-tap.ts). Local mode runs with the benchmark's silenced logs and metrics (as the other rows'
 * tool-ledger side; Powertools writes neither) and a reconciler that does not run during the rows.
 */

const TOKEN = 'dev-token';
const TAP = fileURLToPath(new URL('./dynamo-tap.ts', import.meta.url));

/** The tool name the operations are recorded under (a caller tool: local mode does not run it). */
const TOOL = 'bench.caller_effect';

/** Options of {@link callerRunRows}. */
export interface CallerRunOptions {
  /** Iterations of a row, scaled by the run's size. */
  iterations(base: number): number;
}

/**
 * Runs the three rows: first execution, replay by a ledger that has not cached the record (Powertools
 * without its local cache), replay of a record the ledger has cached (Powertools with its local cache).
 *
 * @example
 * ```ts
 * const rows = await callerRunRows({ iterations: (n) => n });
 * ```
 */
export async function callerRunRows(options: CallerRunOptions): Promise<ScenarioResult[]> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-bench-caller-'));
  const stack = await startLocalStack({
    dataDir,
    preload: [TAP],
    env: { [SETTINGS.reconcileEveryMs.name]: String(24 * 3600 * 1000) },
  });
  const tapUrl = stack
    .stdoutLines()
    .map(tapUrlOf)
    .find((url) => url !== undefined);
  if (tapUrl === undefined) throw new Error('local mode printed no tap line: the preload did not run');
  // As Powertools' persistence layer builds its own client: the SDK's defaults.
  const ptClient = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  try {
    const ptTable = 'bench-powertools-caller';
    await createPowertoolsTable(ptClient, ptTable);
    const tlEffects = new EffectLog();
    const ptEffects = new EffectLog();
    // The same function on both sides: apply the effect, return a small result.
    const effect = (log: EffectLog) => async (operationId: string, args: BenchArguments) => ({
      ok: true,
      n: args.n,
      effect: log.apply(operationId),
    });
    const tlEffect = effect(tlEffects);
    const ptEffect = effect(ptEffects);

    const http = new HttpCounter();
    const ledger = new ToolLedgerClient({
      endpoint: stack.api,
      signer: bearerToken(TOKEN),
      fetch: http.fetch,
    });
    const tlCounter: TallySource = {
      async take() {
        const response = await fetch(`${tapUrl}/take`);
        const tally = (await response.json()) as CallTally;
        return { ...tally, httpRequests: http.take() };
      },
    };
    const run = (operationId: string, args: BenchArguments) =>
      ledger.run({ operationId, tool: TOOL, arguments: args, execute: () => tlEffect(operationId, args) });
    const ptCounter = new CallCounter(ptClient, ['id']);
    const ptFn = (call: BaselineCall) =>
      ptEffect(call.operation_id, call.arguments as unknown as BenchArguments);
    const ptCold = powertoolsFunction({ client: ptClient, tableName: ptTable, fn: ptFn });
    const ptWarm = powertoolsFunction({
      client: ptClient,
      tableName: ptTable,
      fn: ptFn,
      useLocalCache: true,
    });
    const call = (id: string, i: number): BaselineCall => ({
      operation_id: id,
      arguments: { ...benchArguments(i) },
    });

    const rows: ScenarioResult[] = [];
    const firstRounds = { iterations: options.iterations(300), warmup: 30 };
    const first = await runAb({
      ...firstRounds,
      a: {
        counter: tlCounter,
        run: async (i) => expectRun(await run(`caller-first-${i}`, benchArguments(i)), false),
      },
      b: { counter: ptCounter, run: async (i) => void (await ptCold(call(`caller-first-${i}`, i))) },
    });
    rows.push(
      row('ledger.run: first execution', first, tlEffects, ptEffects, 'caller-first-', total(firstRounds)),
    );

    const replayRounds = { iterations: options.iterations(300), warmup: 30 };
    const replay = await runAb({
      ...replayRounds,
      a: {
        counter: tlCounter,
        prepare: async (i) => expectRun(await run(`caller-replay-${i}`, benchArguments(i)), false),
        run: async (i) => expectRun(await run(`caller-replay-${i}`, benchArguments(i)), true),
      },
      b: {
        counter: ptCounter,
        prepare: async (i) => void (await ptCold(call(`caller-replay-${i}`, i))),
        run: async (i) => void (await ptCold(call(`caller-replay-${i}`, i))),
      },
    });
    rows.push({
      ...row(
        'ledger.run: replay (cold cache)',
        replay,
        tlEffects,
        ptEffects,
        'caller-replay-',
        total(replayRounds),
      ),
      note: 'local mode has not cached the record (its outcome was posted, never read back); Powertools: useLocalCache off',
    });

    const warmRounds = { iterations: options.iterations(500), warmup: 50 };
    const warm = await runAb({
      ...warmRounds,
      a: {
        counter: tlCounter,
        prepare: async (i) => {
          expectRun(await run(`caller-warm-${i}`, benchArguments(i)), false);
          expectRun(await run(`caller-warm-${i}`, benchArguments(i)), true);
        },
        run: async (i) => expectRun(await run(`caller-warm-${i}`, benchArguments(i)), true),
      },
      b: {
        counter: ptCounter,
        prepare: async (i) => void (await ptWarm(call(`caller-warm-${i}`, i))),
        run: async (i) => void (await ptWarm(call(`caller-warm-${i}`, i))),
      },
    });
    rows.push({
      ...row(
        'ledger.run: replay (warm cache)',
        warm,
        tlEffects,
        ptEffects,
        'caller-warm-',
        total(warmRounds),
      ),
      note: "local mode's terminal cache holds the record (a replay read it); Powertools: useLocalCache on",
    });
    return rows;
  } finally {
    ptClient.destroy();
    await stack.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  }
}

function total(rounds: { iterations: number; warmup: number }): number {
  return rounds.iterations + rounds.warmup;
}

/** Counts the HTTP requests a client sends, whatever their answer. */
class HttpCounter {
  private count = 0;
  readonly fetch: typeof fetch = (input, init) => {
    this.count += 1;
    return fetch(input, init);
  };
  take(): number {
    const n = this.count;
    this.count = 0;
    return n;
  }
}

/** Fails the benchmark unless `run` came to what the row measures. */
function expectRun(out: RunOutcome, replayed: boolean): void {
  const executions = replayed ? 0 : 1;
  if (out.outcome !== 'succeeded' || out.replayed !== replayed || out.executions !== executions) {
    throw new Error(
      `expected succeeded replayed=${replayed} executions=${executions}, got ${out.outcome} ${out.replayed} ${out.executions}`,
    );
  }
}

function row(
  title: string,
  r: { a: SideSamples; b: SideSamples },
  tlEffects: EffectLog,
  ptEffects: EffectLog,
  prefix: string,
  count: number,
): ScenarioResult {
  // The most times one operation's effect ran, warm-up included.
  let tl = 0;
  let pt = 0;
  for (let i = 0; i < count; i++) {
    tl = Math.max(tl, tlEffects.of(`${prefix}${i}`));
    pt = Math.max(pt, ptEffects.of(`${prefix}${i}`));
  }
  return {
    title,
    tl: r.a,
    pt: r.b,
    opsPerIteration: 1,
    effects: { tl, pt },
    targets: { effectsPerOperation: 1 },
  };
}
