import {
  IdempotencyAlreadyInProgressError,
  IdempotencyValidationError,
} from '@aws-lambda-powertools/idempotency';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdempotencyConflictError } from '../../functions/domain/errors';
import type { AnyTool } from '../../functions/domain/tool';
import type { SubmitResult } from '../../functions/engine/submit-result';
import { TerminalCache } from '../../functions/engine/terminal-cache';
import { runAb, type SideSamples } from './ab-runner';
import { type BenchArguments, benchArguments, type EffectLog } from './bench-tools';
import type { CallCounter } from './call-counter';
import { type BenchLedger, benchLedger } from './ledger-side';
import { type BaselineEvent, type BaselineHandler, lambdaContext } from './powertools-baseline';

/** What the scenarios run on: one ledger table and one Powertools table on the same dynalite. */
export interface BenchEnv {
  tl: {
    client: DynamoDBClient;
    counter: CallCounter;
    table: string;
    effects: EffectLog;
    tools: AnyTool[];
    /** One long-lived process: its terminal cache and read cache stay warm. */
    ledger: BenchLedger;
    /** The same engine on a copy of the ledger table without its two GSIs (diagnosis only). */
    ledgerWithoutIndexes: BenchLedger;
  };
  pt: {
    client: DynamoDBClient;
    counter: CallCounter;
    /** Counts the requests of `coldSameSettings`. */
    counterSameSettings: CallCounter;
    table: string;
    effects: EffectLog;
    /** Without local cache: every replay reaches DynamoDB. */
    cold: BaselineHandler;
    /** `cold` on a client with tool-ledger's client settings (diagnosis). */
    coldSameSettings: BaselineHandler;
    /** With `useLocalCache`. */
    warm: BaselineHandler;
  };
  /** Iterations of a scenario, scaled by the run's size. */
  iterations(base: number): number;
}

/** The targets a scenario is held to (SPEC issue 8). */
export interface Targets {
  /** tool-ledger's DynamoDB round trips per operation on AWS. */
  awsCalls?: number;
  /** tool-ledger median / Powertools median. */
  maxRatio?: number;
  /** Times the effect may run per operation. */
  effectsPerOperation?: number;
}

/** One row of the results table. */
export interface ScenarioResult {
  title: string;
  tl: SideSamples;
  pt: SideSamples;
  /** Operations per measured iteration (calls are reported per operation). */
  opsPerIteration: number;
  /** Most times one operation's effect ran, per side. */
  effects?: { tl: number; pt: number };
  targets: Targets;
  note?: string;
  /** A measurement that explains another row; not in the main table. */
  diagnostic?: boolean;
}

const WRITE = 'bench.effect';
const READ = 'bench.read';

function event(operationId: string, args: BenchArguments, tool = WRITE): BaselineEvent {
  return { operation_id: operationId, tool, arguments: { ...args } };
}

function expectResult(result: SubmitResult, kind: SubmitResult['kind'], replayed?: boolean): void {
  const got = result.kind === 'completed' || result.kind === 'accepted' ? result.replayed : undefined;
  if (result.kind !== kind || (replayed !== undefined && got !== replayed)) {
    throw new Error(
      `expected ${kind}${replayed === undefined ? '' : ` replayed=${replayed}`}, got ${result.kind} ${got}`,
    );
  }
}

async function expectThrows(work: Promise<unknown>, type: new (...args: never[]) => Error): Promise<void> {
  try {
    await work;
  } catch (error) {
    if (error instanceof type) return;
    throw error;
  }
  throw new Error(`expected ${type.name}`);
}

const ctx = () => lambdaContext(10_000);

/** First execution of a new operation ID: reserve + effect + commit. */
export async function firstExecution(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(500),
    warmup: 30,
    a: {
      counter: tl.counter,
      run: async (i) =>
        expectResult(await tl.ledger.submit(`first-${i}`, WRITE, benchArguments(i)), 'completed', false),
    },
    b: {
      counter: pt.counter,
      run: async (i) => void (await pt.cold(event(`first-${i}`, benchArguments(i)), ctx())),
    },
  });
  return { title: 'first execution', ...sides(r), opsPerIteration: 1, targets: { awsCalls: 2, maxRatio: 1 } };
}

/**
 * Diagnosis of the first-execution ratio: the same engine on a ledger table without its two GSIs.
 * dynalite maintains indexes synchronously, inside the write; DynamoDB propagates GSI updates
 * asynchronously, outside the write's latency. The difference between the two rows is what the
 * indexes cost on dynalite.
 */
export async function firstExecutionWithoutIndexes(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(300),
    warmup: 30,
    a: {
      counter: tl.counter,
      run: async (i) =>
        expectResult(
          await tl.ledgerWithoutIndexes.submit(`noindex-${i}`, WRITE, benchArguments(i)),
          'completed',
          false,
        ),
    },
    b: {
      counter: pt.counter,
      run: async (i) => void (await pt.cold(event(`noindex-${i}`, benchArguments(i)), ctx())),
    },
  });
  return {
    title: 'first execution, ledger table without GSIs (diagnosis)',
    ...sides(r),
    opsPerIteration: 1,
    targets: {},
    diagnostic: true,
  };
}

/**
 * Diagnosis of the first-execution ratio: Powertools on a client with tool-ledger's own client
 * settings (the middleware stack resolved once per command class, `cacheMiddleware`), so that the
 * row compares the two engines alone. The main row compares each product with the client it builds.
 */
export async function firstExecutionSameClientSettings(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(300),
    warmup: 30,
    a: {
      counter: tl.counter,
      run: async (i) =>
        expectResult(await tl.ledger.submit(`settings-${i}`, WRITE, benchArguments(i)), 'completed', false),
    },
    b: {
      counter: pt.counterSameSettings,
      run: async (i) => void (await pt.coldSameSettings(event(`settings-${i}`, benchArguments(i)), ctx())),
    },
  });
  return {
    title: 'first execution, both clients with tool-ledger’s client settings (diagnosis)',
    ...sides(r),
    opsPerIteration: 1,
    targets: {},
    diagnostic: true,
  };
}

/** Replay of a completed operation by a process that has not seen it (no local cache). */
export async function coldReplay(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(500),
    warmup: 30,
    a: {
      counter: tl.counter,
      prepare: async (i) => {
        await tl.ledger.submit(`replay-${i}`, WRITE, benchArguments(i));
        tl.ledger.deps.cache = new TerminalCache();
      },
      run: async (i) =>
        expectResult(await tl.ledger.submit(`replay-${i}`, WRITE, benchArguments(i)), 'completed', true),
    },
    b: {
      counter: pt.counter,
      prepare: async (i) => void (await pt.cold(event(`replay-${i}`, benchArguments(i)), ctx())),
      run: async (i) => void (await pt.cold(event(`replay-${i}`, benchArguments(i)), ctx())),
    },
  });
  return {
    title: 'replay (cold cache)',
    ...sides(r),
    opsPerIteration: 1,
    targets: { awsCalls: 1, maxRatio: 1 },
    note: 'tool-ledger: empty terminal cache; Powertools: useLocalCache off',
  };
}

/** Replay by the process that ran it: tool-ledger's terminal cache, Powertools' local cache. */
export async function warmReplay(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(1000),
    warmup: 100,
    a: {
      counter: tl.counter,
      prepare: async (i) => void (await tl.ledger.submit(`warm-${i}`, WRITE, benchArguments(i))),
      run: async (i) =>
        expectResult(await tl.ledger.submit(`warm-${i}`, WRITE, benchArguments(i)), 'completed', true),
    },
    b: {
      counter: pt.counter,
      prepare: async (i) => void (await pt.warm(event(`warm-${i}`, benchArguments(i)), ctx())),
      run: async (i) => void (await pt.warm(event(`warm-${i}`, benchArguments(i)), ctx())),
    },
  });
  return {
    title: 'replay (warm cache)',
    ...sides(r),
    opsPerIteration: 1,
    targets: { awsCalls: 0, maxRatio: 1 },
  };
}

/** The same operation ID with other arguments: refused, nothing runs. */
export async function conflict(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(300),
    warmup: 30,
    a: {
      counter: tl.counter,
      prepare: async (i) => {
        await tl.ledger.submit(`conflict-${i}`, WRITE, benchArguments(i));
        tl.ledger.deps.cache = new TerminalCache();
      },
      run: (i) =>
        expectThrows(
          tl.ledger.submit(`conflict-${i}`, WRITE, benchArguments(i, 'other')),
          IdempotencyConflictError,
        ),
    },
    b: {
      counter: pt.counter,
      prepare: async (i) => void (await pt.cold(event(`conflict-${i}`, benchArguments(i)), ctx())),
      run: (i) =>
        expectThrows(
          pt.cold(event(`conflict-${i}`, benchArguments(i, 'other')), ctx()),
          IdempotencyValidationError,
        ),
    },
  });
  return {
    title: 'conflict (same key, other arguments)',
    ...sides(r),
    opsPerIteration: 1,
    targets: { awsCalls: 1 },
    note: 'cold caches on both sides',
  };
}

const DUPLICATES = 32;

/** 32 copies of one new call at once; the effect must run once. Latency is the whole batch's. */
export async function concurrentDuplicates(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const tlKinds: Record<string, number> = {};
  const ptKinds: Record<string, number> = {};
  const warmup = 2;
  const r = await runAb({
    iterations: env.iterations(20),
    warmup,
    a: {
      counter: tl.counter,
      run: async (i) => {
        const results = await Promise.all(
          Array.from({ length: DUPLICATES }, () => tl.ledger.submit(`dup-${i}`, WRITE, benchArguments(i))),
        );
        for (const result of results) {
          const label = result.kind === 'completed' ? (result.replayed ? 'replayed' : 'ran') : result.kind;
          tlKinds[label] = (tlKinds[label] ?? 0) + 1;
        }
      },
    },
    b: {
      counter: pt.counter,
      run: async (i) => {
        const settled = await Promise.allSettled(
          Array.from({ length: DUPLICATES }, () => pt.cold(event(`dup-${i}`, benchArguments(i)), ctx())),
        );
        for (const s of settled) {
          if (s.status === 'rejected' && !(s.reason instanceof IdempotencyAlreadyInProgressError))
            throw s.reason;
          const label = s.status === 'fulfilled' ? 'returned' : 'in_progress';
          ptKinds[label] = (ptKinds[label] ?? 0) + 1;
        }
      },
    },
  });
  const n = r.a.iterations + warmup;
  let tlMax = 0;
  let ptMax = 0;
  for (let i = 0; i < n; i++) {
    tlMax = Math.max(tlMax, tl.effects.of(`dup-${i}`));
    ptMax = Math.max(ptMax, pt.effects.of(`dup-${i}`));
  }
  return {
    title: `${DUPLICATES} concurrent duplicates`,
    ...sides(r),
    opsPerIteration: DUPLICATES,
    effects: { tl: tlMax, pt: ptMax },
    targets: { effectsPerOperation: 1 },
    note:
      `latency = the whole batch; answers per batch: tool-ledger ${describe(tlKinds, n)}; ` +
      `Powertools ${describe(ptKinds, n)}`,
  };
}

/** A first read through the read-tool path (Powertools under tool-ledger's front door). */
export async function readFirst(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(200),
    warmup: 20,
    a: {
      counter: tl.counter,
      run: async (i) =>
        expectResult(await tl.ledger.submit(`rfirst-${i}`, READ, benchArguments(i)), 'completed', false),
    },
    b: {
      counter: pt.counter,
      run: async (i) => void (await pt.cold(event(`rfirst-${i}`, benchArguments(i), READ), ctx())),
    },
  });
  return {
    title: 'read tool: first read',
    ...sides(r),
    opsPerIteration: 1,
    // The read cache's PutItem and UpdateItem, and a GetItem of the ledger before the read runs (a
    // retry of an operation reserved when the tool was a write is its replay, not a new read).
    targets: { awsCalls: 3 },
  };
}

/** A repeated read by a process that has not seen it. */
export async function readColdReplay(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  let fresh: BenchLedger = tl.ledger;
  const r = await runAb({
    iterations: env.iterations(200),
    warmup: 20,
    a: {
      counter: tl.counter,
      prepare: async (i) => {
        await tl.ledger.submit(`rreplay-${i}`, READ, benchArguments(i));
        // A new process: new deps, so a new Powertools local cache; its setup is not measured.
        fresh = benchLedger(tl.client, tl.table, tl.tools);
        await fresh.submit(`rinit-${i}`, READ, benchArguments(i));
      },
      run: async (i) =>
        expectResult(await fresh.submit(`rreplay-${i}`, READ, benchArguments(i)), 'completed', true),
    },
    b: {
      counter: pt.counter,
      prepare: async (i) => void (await pt.cold(event(`rreplay-${i}`, benchArguments(i), READ), ctx())),
      run: async (i) => void (await pt.cold(event(`rreplay-${i}`, benchArguments(i), READ), ctx())),
    },
  });
  return {
    title: 'read tool: repeated read (cold)',
    ...sides(r),
    opsPerIteration: 1,
    targets: { awsCalls: 1 },
  };
}

/** A repeated read by the process that read it: Powertools' local cache on both sides. */
export async function readWarmReplay(env: BenchEnv): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const r = await runAb({
    iterations: env.iterations(1000),
    warmup: 100,
    a: {
      counter: tl.counter,
      prepare: async (i) => void (await tl.ledger.submit(`rwarm-${i}`, READ, benchArguments(i))),
      run: async (i) =>
        expectResult(await tl.ledger.submit(`rwarm-${i}`, READ, benchArguments(i)), 'completed', true),
    },
    b: {
      counter: pt.counter,
      prepare: async (i) => void (await pt.warm(event(`rwarm-${i}`, benchArguments(i), READ), ctx())),
      run: async (i) => void (await pt.warm(event(`rwarm-${i}`, benchArguments(i), READ), ctx())),
    },
  });
  return {
    title: 'read tool: repeated read (warm)',
    ...sides(r),
    opsPerIteration: 1,
    targets: { awsCalls: 0 },
  };
}

function sides(r: { a: SideSamples; b: SideSamples }): { tl: SideSamples; pt: SideSamples } {
  return { tl: r.a, pt: r.b };
}

function describe(kinds: Record<string, number>, batches: number): string {
  return Object.entries(kinds)
    .map(([k, n]) => `${k} ${Number((n / batches).toFixed(1))}`)
    .join(', ');
}
