import type { SideSamples } from './ab-runner';
import type { BundleFigure } from './cold-start';
import type { LocalThroughput } from './local-throughput';
import type { ReconcilerCost } from './reconciler-cost';
import type { ScenarioResult } from './scenarios';
import { median, p99 } from './stats';

/** A target and whether the run met it. */
export interface Verdict {
  label: string;
  pass: boolean;
}

/** DynamoDB requests per operation: as measured on dynalite, and as AWS would see them. */
export function callsPerOperation(
  side: SideSamples,
  opsPerIteration: number,
): { dynalite: number; aws: number } {
  const ops = side.iterations * opsPerIteration;
  if (ops === 0) return { dynalite: Number.NaN, aws: Number.NaN };
  return { dynalite: side.tally.calls / ops, aws: (side.tally.calls - side.tally.fallbackReads) / ops };
}

/**
 * tool-ledger over Powertools: the median of the per-iteration ratios. The two sides of an iteration
 * run back to back, so each ratio compares them under the same load; the median of those ratios
 * holds steadier than the ratio of the two medians on a busy machine.
 */
export function ratio(row: ScenarioResult): number {
  const n = Math.min(row.tl.latencies.length, row.pt.latencies.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) ratios.push((row.tl.latencies[i] ?? 0) / (row.pt.latencies[i] ?? 1));
  return median(ratios);
}

/** Every target of a row, judged. */
export function verdicts(row: ScenarioResult): Verdict[] {
  const out: Verdict[] = [];
  const t = row.targets;
  if (t.awsCalls !== undefined) {
    const aws = callsPerOperation(row.tl, row.opsPerIteration).aws;
    out.push({ label: `AWS round trips = ${t.awsCalls}`, pass: Math.abs(aws - t.awsCalls) < 1e-9 });
  }
  if (t.maxRatio !== undefined) {
    out.push({ label: `ratio ≤ ${t.maxRatio.toFixed(1)}`, pass: ratio(row) <= t.maxRatio });
  }
  if (t.effectsPerOperation !== undefined && row.effects) {
    const duplicates = row.effects.tl - t.effectsPerOperation;
    out.push({ label: 'zero duplicate effects', pass: duplicates <= 0 && row.effects.tl > 0 });
  }
  return out;
}

/** Milliseconds with sensible precision. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return '–';
  if (value < 1) return value.toFixed(3);
  if (value < 100) return value.toFixed(2);
  return value.toFixed(0);
}

function num(value: number): string {
  if (!Number.isFinite(value)) return '–';
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function verdictText(vs: Verdict[]): string {
  return vs.length === 0 ? '–' : vs.map((v) => `${v.label}: **${v.pass ? 'PASS' : 'MISS'}**`).join('<br>');
}

/** The main comparison table. */
export function scenarioTable(rows: ScenarioResult[]): string {
  return table(
    [
      'scenario',
      'tool-ledger p50 / p99 ms',
      'Powertools p50 / p99 ms',
      'ratio (paired p50)',
      'tool-ledger calls/op dynalite → AWS',
      'Powertools calls/op dynalite → AWS',
      'effects/op tool-ledger / Powertools',
      'targets',
    ],
    rows
      .filter((row) => !row.diagnostic)
      .map((row) => {
        const tl = callsPerOperation(row.tl, row.opsPerIteration);
        const pt = callsPerOperation(row.pt, row.opsPerIteration);
        return [
          row.title,
          `${ms(median(row.tl.latencies))} / ${ms(p99(row.tl.latencies))}`,
          `${ms(median(row.pt.latencies))} / ${ms(p99(row.pt.latencies))}`,
          num(ratio(row)),
          `${num(tl.dynalite)} → ${num(tl.aws)}`,
          `${num(pt.dynalite)} → ${num(pt.aws)}`,
          row.effects ? `${row.effects.tl} / ${row.effects.pt}` : '–',
          verdictText(verdicts(row)),
        ];
      }),
  );
}

/** Where the time goes: inside DynamoDB requests (dynalite, same process) and everything else. */
export function breakdownTable(rows: ScenarioResult[]): string {
  const overhead = (s: SideSamples) => median(s.latencies.map((l, i) => l - (s.dynamoMs[i] ?? 0)));
  return table(
    [
      'scenario',
      'ratio (paired p50)',
      'tool-ledger in DynamoDB / rest (p50 ms)',
      'Powertools in DynamoDB / rest (p50 ms)',
      'tool-ledger commands',
      'Powertools commands',
    ],
    rows
      .filter((row) => row.opsPerIteration === 1)
      .map((row) => [
        row.title,
        num(ratio(row)),
        `${ms(median(row.tl.dynamoMs))} / ${ms(overhead(row.tl))}`,
        `${ms(median(row.pt.dynamoMs))} / ${ms(overhead(row.pt))}`,
        commands(row.tl),
        commands(row.pt),
      ]),
  );
}

function commands(side: SideSamples): string {
  const parts = Object.entries(side.tally.byCommand).map(
    ([name, n]) => `${name.replace('Command', '')} ${num(n / Math.max(1, side.iterations))}`,
  );
  if (side.tally.fallbackReads > 0)
    parts.push(`(fallback GetItem ${num(side.tally.fallbackReads / side.iterations)})`);
  return parts.join(', ') || 'none';
}

/** Reconciler cost against table size. */
export function reconcilerTable(costs: ReconcilerCost[], skipped: string | undefined): string {
  const flat = costs.length > 0 ? costs[0]?.unresolvedRecords : undefined;
  const rows = costs.map((c) => [
    c.terminalRecords.toLocaleString('en-US'),
    String(c.unresolvedRecords),
    String(c.itemsRead),
    String(c.queries),
    ms(c.passMs),
    `items read = ${flat}: **${c.itemsRead === flat ? 'PASS' : 'MISS'}**`,
  ]);
  if (skipped) rows.push([skipped, '', '', '', '', '']);
  return table(
    [
      'terminal records',
      'unresolved',
      'items read by one pass',
      'Query requests',
      'pass ms',
      'target (flat)',
    ],
    rows,
  );
}

/** Bundle sizes and import times, with the executor's import time against the baseline's. */
export function coldStartTable(figures: BundleFigure[], spawns: number): string {
  const kib = (bytes: number | undefined) => (bytes === undefined ? '–' : (bytes / 1024).toFixed(1));
  return table(
    [
      'bundle',
      'loaded at cold start, minified (KiB)',
      'loaded on demand (KiB)',
      `import in a fresh process (median of ${spawns}, ms)`,
      'note',
    ],
    figures.map((f) => [
      `${f.name} (\`${f.entry}\`)`,
      kib(f.bytes),
      kib(f.lazyBytes),
      f.importMs === undefined ? '–' : ms(f.importMs),
      f.name === 'executor' && f.importRatio !== undefined
        ? `${num(f.importRatio)}× the baseline's import (paired median); ≤ 1.1×: **${f.importRatio <= 1.1 ? 'PASS' : 'MISS'}**`
        : (f.note ?? ''),
    ]),
  );
}

/** Local mode's throughput against the bare store work on the same dynalite. */
export function localThroughputTable(figure: LocalThroughput | undefined): string {
  if (!figure) return '(not run)';
  const side = (s: LocalThroughput['ledger']) => [
    num(s.perSecond),
    `${ms(s.p50)} / ${ms(s.p99)}`,
    String(s.operations),
  ];
  return table(
    [
      'clients',
      'tool-ledger operations/s',
      'tool-ledger p50 / p99 ms',
      'operations',
      'bare PutItem + UpdateItem operations/s',
      'bare p50 / p99 ms',
      'operations',
      'ratio',
      'target',
    ],
    [
      [
        String(figure.concurrency),
        ...side(figure.ledger),
        ...side(figure.baseline),
        num(figure.ratio),
        `ratio ≥ 0.5: **${figure.ratio >= 0.5 ? 'PASS' : 'MISS'}**`,
      ],
    ],
  );
}

/**
 * The `ledger.run` rows: both sides' latency, the paired ratio, and the round trips each side made per
 * operation: HTTP requests from the client, DynamoDB requests in local mode and in Powertools.
 */
export function callerRunTable(rows: ScenarioResult[]): string {
  if (rows.length === 0) return '(not run)';
  const rest = (s: SideSamples) => median(s.latencies.map((l, i) => l - (s.dynamoMs[i] ?? 0)));
  return table(
    [
      'scenario',
      '`ledger.run` p50 / p99 ms',
      'Powertools p50 / p99 ms',
      'ratio (paired p50)',
      '`ledger.run` HTTP requests/op',
      'local mode DynamoDB calls/op dynalite → AWS',
      'Powertools DynamoDB calls/op dynalite → AWS',
      '`ledger.run` in DynamoDB / rest (p50 ms)',
      'Powertools in DynamoDB / rest (p50 ms)',
      'local mode commands',
      'Powertools commands',
      'effects/op `ledger.run` / Powertools',
    ],
    rows.map((row) => {
      const tl = callsPerOperation(row.tl, row.opsPerIteration);
      const pt = callsPerOperation(row.pt, row.opsPerIteration);
      return [
        row.title,
        `${ms(median(row.tl.latencies))} / ${ms(p99(row.tl.latencies))}`,
        `${ms(median(row.pt.latencies))} / ${ms(p99(row.pt.latencies))}`,
        num(ratio(row)),
        num(row.tl.tally.httpRequests / Math.max(1, row.tl.iterations * row.opsPerIteration)),
        `${num(tl.dynalite)} → ${num(tl.aws)}`,
        `${num(pt.dynalite)} → ${num(pt.aws)}`,
        `${ms(median(row.tl.dynamoMs))} / ${ms(rest(row.tl))}`,
        `${ms(median(row.pt.dynamoMs))} / ${ms(rest(row.pt))}`,
        commands(row.tl),
        commands(row.pt),
        row.effects ? `${row.effects.tl} / ${row.effects.pt}` : '–',
      ];
    }),
  );
}

/**
 * What the HTTP hop costs, in words, from the `ledger.run` rows: time outside DynamoDB requests per HTTP
 * request (the loopback, local mode's HTTP adapter and API handler, the client), against the time
 * Powertools spends outside DynamoDB requests.
 */
export function callerHopSummary(rows: ScenarioResult[]): string {
  const rest = (s: SideSamples) => median(s.latencies.map((l, i) => l - (s.dynamoMs[i] ?? 0)));
  const perOp = (s: SideSamples) => s.tally.httpRequests / Math.max(1, s.iterations);
  return rows
    .map((row) => {
      const requests = perOp(row.tl);
      return (
        `- ${row.title}: \`ledger.run\` ${ms(median(row.tl.latencies))} ms, of which ${ms(rest(row.tl))} ms outside ` +
        `local mode's DynamoDB requests for ${num(requests)} HTTP request${requests === 1 ? '' : 's'} ` +
        `(${ms(rest(row.tl) / Math.max(1, requests))} ms each); Powertools ${ms(median(row.pt.latencies))} ms, ` +
        `of which ${ms(rest(row.pt))} ms outside its DynamoDB requests.`
      );
    })
    .join('\n');
}
