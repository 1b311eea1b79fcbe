import path from 'node:path';
import type { Metafile } from 'esbuild';
import { BUNDLE_ENTRY_FILE } from '../lib/bundling';

/** A handler bundle's files, split by when Node loads them. */
export interface BundleOutputs {
  /** The entry file (`…/index.mjs`). */
  entry: string;
  /** The entry and every chunk it imports statically: what a cold start reads, compiles and evaluates. */
  atStart: string[];
  /** Chunks only a dynamic `import()` reaches: loaded when that path first runs. */
  lazy: string[];
  /** Bytes of each JavaScript output (source maps excluded). */
  bytes: Map<string, number>;
}

/**
 * Sorts the outputs of a handler build (lib/bundling.ts `esbuildOptions`, with `metafile: true`) into
 * those a cold start loads and those loaded on demand, following the static imports between outputs.
 *
 * @example
 * ```ts
 * const { atStart, lazy, bytes } = bundleOutputs((await build({ ...esbuildOptions(entry, settings, dir), metafile: true })).metafile);
 * ```
 */
export function bundleOutputs(meta: Metafile): BundleOutputs {
  const js = Object.keys(meta.outputs).filter((file) => file.endsWith('.mjs'));
  const entry = js.find(
    (file) => path.basename(file) === BUNDLE_ENTRY_FILE && meta.outputs[file]?.entryPoint,
  );
  if (entry === undefined) throw new Error(`no ${BUNDLE_ENTRY_FILE} entry among the outputs`);
  const atStart = staticallyReached(meta.outputs, entry);
  return {
    entry,
    atStart: [...atStart],
    lazy: js.filter((file) => !atStart.has(file)),
    bytes: new Map(js.map((file) => [file, meta.outputs[file]?.bytes ?? 0])),
  };
}

/** A metafile's files (its inputs, or its outputs) and the imports of each. */
type ImportGraph = Readonly<
  Record<string, { imports: readonly { path: string; kind: string; external?: boolean }[] }>
>;

/**
 * The files reached from `start` through static imports only, `start` included: what loading `start`
 * loads. A dynamic `import()` is where loading waits, so what only it reaches is left out.
 *
 * @example
 * ```ts
 * staticallyReached(metafile.inputs, 'functions/handlers/executor.ts').has('functions/ledger/read-cache.ts'); // false
 * ```
 */
export function staticallyReached(graph: ImportGraph, start: string): Set<string> {
  const reached = new Set([start]);
  const queue = [start];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    for (const edge of graph[file]?.imports ?? []) {
      if (edge.kind !== 'import-statement' || edge.external || reached.has(edge.path)) continue;
      reached.add(edge.path);
      queue.push(edge.path);
    }
  }
  return reached;
}

/** The total bytes of some outputs. */
export function totalBytes(outputs: BundleOutputs, files: readonly string[]): number {
  return files.reduce((sum, file) => sum + (outputs.bytes.get(file) ?? 0), 0);
}
