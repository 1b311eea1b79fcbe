import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

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
 * The relative modules a file loads when it is loaded: static imports and re-exports that are not
 * type-only. A lazy `import()` runs later, so it cannot take part in a load-time circle.
 */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  const statement = /^(?:import|export)\s+(?!type\b)(?:[^;'"]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm;
  for (const match of text.matchAll(statement)) {
    const target = path.resolve(path.dirname(file), match[1] as string);
    const candidates = [target, `${target}.ts`, path.join(target, 'index.ts')];
    const hit = candidates.find((c) => c.endsWith('.ts') && safeIsFile(c));
    if (hit) found.push(hit);
  }
  return found;
}

function safeIsFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
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
        found.push(loop.map((f) => path.relative(ROOT, f)).join(' → '));
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
  const graph = new Map(files.map((f) => [f, runtimeImports(f)]));

  it('reads the imports it is about (a sanity check on the parser)', () => {
    const handler = graph.get(path.join(ROOT, 'functions', 'handlers', 'executor.ts')) ?? [];
    expect(handler.length).toBeGreaterThan(0);
    expect(files.length).toBeGreaterThan(100);
  });

  it('has no circle: every module can be loaded before the ones that load it', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const a = path.join(ROOT, 'a.ts');
    const b = path.join(ROOT, 'b.ts');
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
