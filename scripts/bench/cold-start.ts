import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { SETTINGS } from '../../functions/contract/environment';
import { DEFAULT_TOOLS_MODULE, esbuildOptions } from '../../lib/bundling';
import { bundleOutputs, totalBytes } from '../bundle-outputs';
import { median } from './stats';

/** Size and import time of one bundle. */
export interface BundleFigure {
  name: string;
  entry: string;
  /**
   * Minified bytes a cold start loads (the entry and the chunks it imports statically), or undefined
   * when the entry does not exist (yet) or failed to bundle.
   */
  bytes?: number;
  /** Minified bytes of the chunks loaded on demand. */
  lazyBytes?: number;
  /** Median time to import the bundle in a fresh Node process, ms (executor and baseline only). */
  importMs?: number;
  /** Median of the per-round ratios of this bundle's import to the baseline's (executor only). */
  importRatio?: number;
  note?: string;
}

const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** Inside node_modules, so the external `@aws-sdk/*` imports resolve as they do on Lambda. */
const OUT_DIR = path.join(ROOT, 'node_modules', '.cache', 'tool-ledger-bench');

/** Name of the baseline's bundle: the executor's import time is compared with its. */
export const BASELINE_BUNDLE = 'Powertools idempotency handler';

const ENTRIES: readonly { name: string; entry: string; timeImport: boolean }[] = [
  { name: 'api', entry: 'functions/handlers/api.ts', timeImport: false },
  { name: 'executor', entry: 'functions/handlers/executor.ts', timeImport: true },
  { name: 'reconciler', entry: 'functions/handlers/reconciler.ts', timeImport: false },
  { name: BASELINE_BUNDLE, entry: 'scripts/bench/powertools-handler.ts', timeImport: true },
];

/**
 * Bundles each Lambda entry the way the CDK ships it (esbuild, platform node, ESM, target node24,
 * minified, `@aws-sdk/*` external: the runtime provides the SDK, code behind dynamic imports in chunks;
 * the options of lib/bundling.ts), then
 * times `import()` of the executor bundle and of the Powertools baseline in fresh Node processes,
 * alternating between the two.
 */
export async function coldStart(spawns: number): Promise<BundleFigure[]> {
  mkdirSync(OUT_DIR, { recursive: true });
  const figures: BundleFigure[] = [];
  const outputs = new Map<string, string>();
  for (const { name, entry } of ENTRIES) {
    const absolute = path.join(ROOT, entry);
    if (!existsSync(absolute)) {
      figures.push({ name, entry, note: 'entry not written yet: skipped' });
      continue;
    }
    const outdir = path.join(OUT_DIR, name.replace(/\W+/g, '-'));
    try {
      // The construct's defaults: the shipped tools, no MCP upstreams.
      rmSync(outdir, { recursive: true, force: true });
      const result = await build({
        ...esbuildOptions(absolute, { toolsModule: DEFAULT_TOOLS_MODULE, bundleAwsSdk: false }, outdir),
        metafile: true,
        logLevel: 'silent',
      });
      const files = bundleOutputs(result.metafile);
      figures.push({
        name,
        entry,
        bytes: totalBytes(files, files.atStart),
        lazyBytes: totalBytes(files, files.lazy),
      });
      outputs.set(name, path.resolve(files.entry));
    } catch (error) {
      figures.push({ name, entry, note: `bundling failed: ${(error as Error).message.split('\n')[0]}` });
    }
  }
  const timed = ENTRIES.filter((e) => e.timeImport && outputs.has(e.name));
  // One import of each timed bundle per round, alternating which goes first; a failed import is a hole.
  const rounds = new Map<string, (number | undefined)[]>(timed.map((e) => [e.name, []]));
  for (let i = 0; i < spawns; i++) {
    const order = i % 2 === 0 ? timed : [...timed].reverse();
    for (const { name } of order) rounds.get(name)?.push(await importTime(outputs.get(name) ?? ''));
  }
  const baseline = rounds.get(BASELINE_BUNDLE) ?? [];
  for (const figure of figures) {
    const round = rounds.get(figure.name);
    if (!round) continue;
    const times = round.filter((ms): ms is number => ms !== undefined);
    if (times.length === 0) {
      figure.note = 'import failed in a fresh process';
      continue;
    }
    figure.importMs = median(times);
    if (figure.name === BASELINE_BUNDLE) continue;
    // Paired as the other scenarios are: the two imports of a round ran back to back.
    const ratios = round.flatMap((ms, i) => {
      const base = baseline[i];
      return ms !== undefined && base !== undefined ? [ms / base] : [];
    });
    if (ratios.length > 0) figure.importRatio = median(ratios);
  }
  return figures;
}

const IMPORT_SCRIPT =
  'const t=performance.now();await import(process.argv[1]);process.stdout.write(String(performance.now()-t));';

/** Time to import a bundle in a fresh Node process, as a Lambda init would (handler not invoked). */
function importTime(file: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', IMPORT_SCRIPT, pathToFileURL(file).href],
      {
        cwd: OUT_DIR,
        env: {
          PATH: process.env.PATH ?? '',
          AWS_REGION: 'us-east-1',
          [SETTINGS.tableName.name]: 'tool-ledger',
          IDEMPOTENCY_TABLE_NAME: 'idempotency',
        },
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.on('close', (code) => {
      const ms = Number(out);
      resolve(code === 0 && Number.isFinite(ms) ? ms : undefined);
    });
  });
}
