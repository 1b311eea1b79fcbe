import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..');

/** Every `.ts` file below `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : sources(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/**
 * The project's own modules each file loads when it is loaded, as esbuild resolves them: imports and
 * re-exports that survive TypeScript's erasure (type-only ones do not). A lazy `import()` runs later,
 * so it cannot take part in a load-time circle. Keys and targets are paths relative to the root.
 */
async function loadGraph(files: string[]): Promise<Map<string, string[]>> {
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: files,
    bundle: true,
    write: false,
    metafile: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    outdir: 'import-graph',
    logLevel: 'silent',
  });
  return new Map(
    Object.entries(metafile.inputs).map(([file, input]) => [
      file,
      input.imports.filter((i) => i.kind === 'import-statement' && !i.external).map((i) => i.path),
    ]),
  );
}

/** One circle per strongly connected part of the graph that loops, as a readable path. */
function circles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') {
        const loop = stack.slice(stack.indexOf(next)).concat(next);
        found.push(loop.join(' → '));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

describe('the import graph', () => {
  const files = ['functions', 'lib', 'cli', 'bin'].flatMap((dir) => sources(path.join(ROOT, dir)));
  let graph = new Map<string, string[]>();
  beforeAll(async () => {
    graph = await loadGraph(files);
  });

  it('reads the imports it is about (a sanity check on the parser)', () => {
    const handler = graph.get('functions/handlers/executor.ts') ?? [];
    expect(handler.length).toBeGreaterThan(0);
    expect(files.length).toBeGreaterThan(100);
  });

  it('has no circle: every module can be loaded before the ones that load it', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const a = 'a.ts';
    const b = 'b.ts';
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual(['a.ts → b.ts → a.ts']);
  });
});
