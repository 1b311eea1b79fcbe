import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateTableCommand, type DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { LEDGER_TABLE } from '../../functions/contract/table';
import { ensureLedgerTable, ledgerTableDefinition } from '../../functions/ledger/table';
import { SDK_CLIENT_SETTINGS } from '../../functions/wiring';
import { BUNDLE_TARGET } from '../../lib/bundling';
import { benchReadTool, benchWriteTool, EffectLog } from './bench-tools';
import { CallCounter } from './call-counter';
import { callerRunRows } from './caller-run';
import { capacityMarkdown, capacityTable } from './capacity';
import { coldStart } from './cold-start';
import { crashThenRetry } from './crash-scenario';
import { startBenchDynalite } from './dynalite-server';
import { benchLedger } from './ledger-side';
import { type LocalThroughput, localThroughput } from './local-throughput';
import { createPowertoolsTable, powertoolsHandler } from './powertools-baseline';
import { reconcilerCost } from './reconciler-cost';
import {
  breakdownTable,
  callerHopSummary,
  callerRunTable,
  coldStartTable,
  localThroughputTable,
  reconcilerTable,
  scenarioTable,
} from './report';
import {
  type BenchEnv,
  coldReplay,
  concurrentDuplicates,
  conflict,
  firstExecution,
  firstExecutionSameClientSettings,
  firstExecutionWithoutIndexes,
  readColdReplay,
  readFirst,
  readWarmReplay,
  type ScenarioResult,
  warmReplay,
} from './scenarios';
import { type TracingRow, tracingCost, tracingTable } from './tracing-cost';

const SPAWNS = 20;
/** Operations per side of the local-mode throughput row (scaled by BENCH_SCALE, at least 200). */
const LOCAL_OPERATIONS = 2_000;
/** Concurrent clients of the local-mode throughput row. */
const LOCAL_CLIENTS = 16;

/** Runs every part of the benchmark, prints the tables and writes them as markdown. */
export async function runBench(): Promise<void> {
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const only = process.env.BENCH_ONLY?.split(',');
  const outFile = path.resolve(process.env.BENCH_OUT ?? 'bench-results/latest.md');
  const started = performance.now();
  const loadBefore = os.loadavg()[0] ?? 0;
  const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);

  const db = await startBenchDynalite();
  try {
    // Each side's client as each product builds its own: tool-ledger's as its handlers do
    // (functions/wiring.ts), Powertools' with the SDK's defaults, as its persistence layer does.
    const tlClient = db.newClient({ settings: SDK_CLIENT_SETTINGS });
    const ptClient = db.newClient();
    // The same Powertools with tool-ledger's client settings, for the diagnosis row.
    const ptSameSettingsClient = db.newClient({ settings: SDK_CLIENT_SETTINGS });
    const tlTable = 'bench-ledger';
    const ptTable = 'bench-powertools';
    await ensureLedgerTable(tlClient, tlTable);
    const noIndexTable = 'bench-ledger-without-indexes';
    await createTableWithoutIndexes(tlClient, noIndexTable);
    await createPowertoolsTable(ptClient, ptTable);
    const tlEffects = new EffectLog();
    const ptEffects = new EffectLog();
    const tools = [benchWriteTool(tlEffects), benchReadTool(tlEffects)];
    const work = async (e: { operation_id: string; arguments: Record<string, unknown> }) => ({
      ok: true,
      n: e.arguments.n,
      effect: ptEffects.apply(e.operation_id),
    });
    const env: BenchEnv = {
      tl: {
        client: tlClient,
        counter: new CallCounter(tlClient, [LEDGER_TABLE.partitionKey.name, LEDGER_TABLE.sortKey.name]),
        table: tlTable,
        effects: tlEffects,
        tools,
        ledger: benchLedger(tlClient, tlTable, tools),
        ledgerWithoutIndexes: benchLedger(tlClient, noIndexTable, tools),
      },
      pt: {
        client: ptClient,
        counter: new CallCounter(ptClient, ['id']),
        counterSameSettings: new CallCounter(ptSameSettingsClient, ['id']),
        table: ptTable,
        effects: ptEffects,
        cold: powertoolsHandler({ client: ptClient, tableName: ptTable, work }),
        coldSameSettings: powertoolsHandler({ client: ptSameSettingsClient, tableName: ptTable, work }),
        warm: powertoolsHandler({ client: ptClient, tableName: ptTable, work, useLocalCache: true }),
      },
      iterations: (base) => Math.max(2, Math.round(base * scale)),
    };

    const rows: ScenarioResult[] = [];
    const scenarios: [string, (e: BenchEnv) => Promise<ScenarioResult>][] = [
      ['first', firstExecution],
      ['first-noindex', firstExecutionWithoutIndexes],
      ['first-settings', firstExecutionSameClientSettings],
      ['replay', coldReplay],
      ['warm', warmReplay],
      ['conflict', conflict],
      ['concurrent', concurrentDuplicates],
      ['crash', (e) => crashThenRetry(e, db)],
      ['read-first', readFirst],
      ['read-replay', readColdReplay],
      ['read-warm', readWarmReplay],
    ];
    for (const [key, scenario] of scenarios) {
      if (only && !only.includes(key)) continue;
      const t = performance.now();
      const row = await scenario(env);
      rows.push(row);
      progress(`${row.title}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    let callerRows: ScenarioResult[] = [];
    if (!only || only.includes('caller')) {
      const t = performance.now();
      callerRows = await callerRunRows({ iterations: env.iterations });
      progress(`ledger.run against local mode: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    // 100,000 records take about 30 s to load; a smoke run (BENCH_SCALE < 0.5) stops at 10,000.
    const sizes = scale < 0.5 ? [1_000, 10_000] : [1_000, 10_000, 100_000];
    let costs: Awaited<ReturnType<typeof reconcilerCost>> = [];
    if (!only || only.includes('reconciler')) {
      const t = performance.now();
      costs = await reconcilerCost(db.newClient(), tools, sizes);
      progress(`reconciler cost: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    const skipped = sizes.length < 3 ? '100,000: skipped in a smoke run (BENCH_SCALE < 0.5)' : undefined;

    let capacity: Awaited<ReturnType<typeof capacityTable>> = [];
    if (!only || only.includes('capacity')) {
      const t = performance.now();
      capacity = await capacityTable(
        () => db.newClient(),
        new EffectLog(),
        new EffectLog(),
        [1024, 32 * 1024],
        20,
      );
      progress(`capacity: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    let local: LocalThroughput | undefined;
    if (!only || only.includes('local')) {
      const t = performance.now();
      local = await localThroughput({
        operations: Math.max(200, Math.round(LOCAL_OPERATIONS * scale)),
        concurrency: LOCAL_CLIENTS,
      });
      progress(`local mode throughput: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    let bundles: Awaited<ReturnType<typeof coldStart>> = [];
    if (!only || only.includes('cold-start')) {
      const t = performance.now();
      bundles = await coldStart(SPAWNS);
      progress(`cold start: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    // Last: it registers a tracing SDK for the rest of the process.
    let tracing: TracingRow[] = [];
    if (!only || only.includes('tracing')) {
      const t = performance.now();
      tracing = await tracingCost(tlClient, tlTable, tools, env.iterations(300));
      progress(`tracing cost: ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }

    const cpus = os.cpus();
    const markdown = [
      '## Benchmark: tool-ledger vs Powertools idempotency',
      '',
      `Run ${new Date().toISOString()} on ${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, Node ${process.version}, ` +
        `dynalite in-process; load average ${loadBefore.toFixed(2)} at start, ${(os.loadavg()[0] ?? 0).toFixed(2)} at end; ` +
        `${((performance.now() - started) / 1000).toFixed(0)} s in all (BENCH_SCALE=${scale}${only ? `, BENCH_ONLY=${only.join(',')}` : ''}).`,
      '',
      'Both sides run in alternation on the same dynalite and the same operation IDs; tool-ledger is',
      '`submitOperation` on a `LedgerStore` with a trivial in-memory tool (transition logs and metrics',
      'silenced: Powertools emits neither), Powertools is `makeIdempotent` with `DynamoDBPersistenceLayer`,',
      '`eventKeyJmesPath: operation_id` and `payloadValidationJmesPath: arguments`. Each side has the DynamoDB',
      'client its product builds: tool-ledger the settings of its handlers (functions/wiring.ts: the SDK',
      'resolves the middleware stack once per command, `cacheMiddleware`), Powertools the SDK defaults, as',
      'its persistence layer builds its own client; a diagnosis row gives both the same. Calls are every request',
      'sent (SDK retries included), per operation. "AWS" subtracts the GetItems that only fetch the item of a',
      'failed conditional write: dynalite ignores `ReturnValuesOnConditionCheckFailure`, AWS returns the item.',
      'The ratio is the median of per-iteration ratios (the two sides of an iteration run back to back).',
      '',
      scenarioTable(rows),
      '',
      ...rows.filter((r) => r.note).map((r) => `- ${r.title}: ${r.note}.`),
      '',
      '### Where the time goes',
      '',
      'Median time inside DynamoDB requests (from sending to the parsed response: the loopback, dynalite,',
      'which shares the process, and response parsing) and the rest (the engine or Powertools, request',
      'marshalling, serialization and signing, the tool). The diagnosis rows run the same engine on a',
      'copy of the ledger table without its two GSIs (dynalite updates indexes inside the write, DynamoDB',
      'propagates them asynchronously, outside the write latency), and Powertools on a client with',
      'tool-ledger’s client settings.',
      '',
      breakdownTable(rows),
      '',
      '### `ledger.run` against local mode: what the HTTP hop costs',
      '',
      'One in-process function (the trivial effect) made run-once two ways, the two sides alternating per',
      'iteration as above: `ledger.run` in this process against local mode (`npm start` as a child process,',
      'logs and metrics silenced, the reconciler idle), the operation recorded over HTTP as a caller-executed',
      "operation; and Powertools' `makeIdempotent` around the same function (a plain function, not a handler)",
      "on the same dynalite, local mode's own, over its loopback endpoint, with the SDK client Powertools builds.",
      'HTTP requests are counted by the client’s `fetch`; DynamoDB requests by the same SDK middleware on both',
      "sides, in local mode through a preloaded tap on its clients (scripts/bench/dynamo-tap.ts). Local mode's",
      'handlers reach dynalite over a MessagePort, Powertools over loopback HTTP.',
      '',
      callerRunTable(callerRows),
      '',
      ...callerRows.filter((r) => r.note).map((r) => `- ${r.title}: ${r.note}.`),
      '',
      callerHopSummary(callerRows),
      '',
      '### Reconciler cost',
      '',
      'One pass over a table of N terminal records and 20 unresolved ones (`pending`, lease expired):',
      'items returned by DynamoDB Query, counted by the SDK middleware.',
      '',
      reconcilerTable(costs, skipped),
      '',
      '### Local mode throughput',
      '',
      `Local mode (\`npm start\`, a child process on a fresh data folder, its default logging) under`,
      `${LOCAL_CLIENTS} clients, each \`POST /v1/operations\` a new operation of the benchmark's trivial`,
      'write tool run synchronously (201), end to end over HTTP; against a bare AWS SDK client doing one',
      "conditional PutItem and one conditional UpdateItem per operation on local mode's own dynalite (same",
      'process, same LevelDB folder, same table), at the same concurrency. The two sides alternate in four',
      'rounds; operations per second are over the measured rounds, after a warm-up of each.',
      '',
      localThroughputTable(local),
      '',
      '### Capacity per operation',
      '',
      'Mean capacity units per operation over 20 operations, measured in the same run for both sides.',
      'Table units are what dynalite reports with `ReturnConsumedCapacity: TOTAL` (a write whose',
      'condition fails is charged ⌈item size ÷ 1 KB⌉, at least 1, as DynamoDB charges it; dynalite',
      'reports nothing with the error). dynalite has no index capacity to report, so index writes are',
      'counted from the item before and after each write: a put when the item enters an index, a',
      'delete when it leaves, both when its index key changes, one when only a projected attribute',
      'changes, each ⌈projected size ÷ 1 KB⌉. Reads include the GetItem after a failed conditional',
      'write that dynalite needs and DynamoDB does not (it returns the old item), and every query of a',
      'reconciler pass (all 8 attention shards; dynalite charges an empty one nothing, DynamoDB at least',
      'half a unit). The check of where each operation ended is not counted. Arguments are real JSON',
      '(in turn a patch of this repository, a source file, package-lock entries). The rows "before',
      '(plain text)" run the same ledger with arguments and results stored as plain text, as releases',
      'before compression did.',
      '',
      capacityMarkdown(capacity),
      '',
      '### Cold start',
      '',
      `esbuild, platform node, ESM, target ${BUNDLE_TARGET}, minified, \`@aws-sdk/*\` external (as lib/bundling.ts`,
      'ships them); import time of the bundle in a fresh Node process, the two timed bundles alternating.',
      '',
      coldStartTable(bundles, SPAWNS),
      '',
      '### Tracing off and on',
      '',
      'tool-ledger alone, first executions and their replays inside an operation span as the front doors',
      'open it: off is the OpenTelemetry API with no SDK registered (every span a no-op, what a deployment',
      'without tracing runs); on is the Node SDK registered, every span sampled into a batch processor and',
      'an in-memory exporter (no network). The API cannot unregister an SDK, so off runs first, then on,',
      'each after 30 warm-up operations. Spans per operation: the operation span and one per DynamoDB call.',
      '',
      tracingTable(tracing),
      '',
    ].join('\n');
    process.stdout.write(`${markdown}\n`);
    mkdirSync(path.dirname(outFile), { recursive: true });
    writeFileSync(outFile, markdown);
    // The raw samples, for anyone who wants other statistics than these.
    const raw = [...rows, ...callerRows].map((r) => ({
      title: r.title,
      toolLedgerMs: r.tl.latencies,
      powertoolsMs: r.pt.latencies,
    }));
    writeFileSync(
      outFile.replace(/\.md$/, '.json'),
      JSON.stringify({ scenarios: raw, reconciler: costs, capacity, bundles, local, tracing }),
    );
    progress(`written to ${path.relative(process.cwd(), outFile)}`);
  } finally {
    await db.stop();
  }
}

/** The ledger table's keys without its GSIs: isolates what index maintenance costs on dynalite. */
async function createTableWithoutIndexes(client: DynamoDBClient, tableName: string): Promise<void> {
  const definition = ledgerTableDefinition(tableName);
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: definition.BillingMode,
      KeySchema: definition.KeySchema,
      AttributeDefinitions: definition.AttributeDefinitions?.filter(
        (a) =>
          a.AttributeName === LEDGER_TABLE.partitionKey.name || a.AttributeName === LEDGER_TABLE.sortKey.name,
      ),
    }),
  );
  await waitUntilTableExists(
    { client, maxWaitTime: 30, minDelay: 0.05, maxDelay: 0.2 },
    { TableName: tableName },
  );
}
