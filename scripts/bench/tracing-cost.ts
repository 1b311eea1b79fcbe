import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchSpanProcessor, InMemorySpanExporter, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { AnyTool } from '../../functions/domain/tool';
import { inOperationSpan } from '../../functions/observability/tracing';
import { benchArguments } from './bench-tools';
import { benchLedger } from './ledger-side';
import { median, p99 } from './stats';

/** One row: a scenario's latency with tracing off (the API's no-op) and on (an SDK recording every span). */
export interface TracingRow {
  scenario: string;
  offMedianMs: number;
  offP99Ms: number;
  onMedianMs: number;
  onP99Ms: number;
  /** Spans recorded per operation with tracing on. */
  spansPerOperation: number;
}

const WRITE = 'bench.effect';

/**
 * The cost of tracing: the same engine and table, first executions and replays in an operation span
 * as the front doors open it, first with no SDK registered (every span a no-op: what a deployment
 * without tracing runs), then with the OpenTelemetry Node SDK registered, sampling every span into a
 * batch processor and an in-memory exporter (no network). The API's global provider cannot be taken
 * back once set, so the two phases run one after the other (off first), each after its own warm-up.
 */
export async function tracingCost(
  client: DynamoDBClient,
  tableName: string,
  tools: AnyTool[],
  iterations: number,
): Promise<TracingRow[]> {
  const ledger = benchLedger(client, tableName, tools);
  const phase = async (label: string) => {
    const first: number[] = [];
    const replay: number[] = [];
    const call = (id: string, i: number) =>
      inOperationSpan('execute_tool', undefined, () => ledger.submit(id, WRITE, benchArguments(i)));
    for (let i = 0; i < 30; i++) await call(`trace-${label}-warm-${i}`, i);
    for (let i = 0; i < iterations; i++) {
      const id = `trace-${label}-${i}`;
      let t = performance.now();
      await call(id, i);
      first.push(performance.now() - t);
      t = performance.now();
      await call(id, i);
      replay.push(performance.now() - t);
    }
    return { first, replay };
  };

  const off = await phase('off');
  const exporter = new InMemorySpanExporter();
  const processor = new BatchSpanProcessor(exporter, { maxQueueSize: 100_000, maxExportBatchSize: 512 });
  const provider = new NodeTracerProvider({ spanProcessors: [processor] });
  provider.register();
  let spans = 0;
  const count = async () => {
    await processor.forceFlush();
    spans += exporter.getFinishedSpans().length;
    exporter.reset();
  };
  const on = await phase('on');
  await count();
  await provider.shutdown();
  // The warm-up's operations count too: 30 + iterations first executions and as many replays.
  const perOperation = spans / (2 * (30 + iterations));
  return [
    row('first execution', off.first, on.first, perOperation),
    row('replay', off.replay, on.replay, perOperation),
  ];
}

function row(scenario: string, off: number[], on: number[], spansPerOperation: number): TracingRow {
  return {
    scenario,
    offMedianMs: median(off),
    offP99Ms: p99(off),
    onMedianMs: median(on),
    onP99Ms: p99(on),
    spansPerOperation,
  };
}

/** The rows as a markdown table. */
export function tracingTable(rows: readonly TracingRow[]): string {
  if (rows.length === 0) return '_not run (BENCH_ONLY)_';
  const ms = (n: number) => n.toFixed(2);
  return [
    '| scenario | off: median ms | off: p99 ms | on: median ms | on: p99 ms | on − off (median) | spans per operation (both scenarios) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${ms(r.offMedianMs)} | ${ms(r.offP99Ms)} | ${ms(r.onMedianMs)} | ${ms(r.onP99Ms)} | ` +
        `${ms(r.onMedianMs - r.offMedianMs)} | ${r.spansPerOperation.toFixed(1)} |`,
    ),
  ].join('\n');
}
