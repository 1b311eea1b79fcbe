import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Arguments of the size asked for, made of real JSON rather than random bytes, so that what a store
 * squeezes out of them is what it would squeeze out of an agent's calls: a patch (unified diff of
 * this repository's source), a file (its text), a JSON document (entries of package-lock.json). The
 * kind rotates with `n`, and each operation starts at another place in the corpus.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let sourceCache: string | undefined;
function source(): string {
  if (sourceCache === undefined) {
    const dir = join(ROOT, 'functions', 'engine');
    sourceCache = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .sort()
      .map((f) => `// ${f}\n${readFileSync(join(dir, f), 'utf8')}`)
      .join('\n');
  }
  return sourceCache;
}

let lockCache: [string, unknown][] | undefined;
function lockEntries(): [string, unknown][] {
  if (lockCache === undefined) {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    lockCache = Object.entries(lock.packages);
  }
  return lockCache;
}

/** `bytes` characters of the corpus from an offset that depends on `n`. */
function slice(text: string, bytes: number, n: number): string {
  const start = (n * 7919) % Math.max(1, text.length - bytes);
  return text.slice(start, start + bytes);
}

/** A unified diff of about `bytes` characters. */
function patch(bytes: number, n: number): string {
  const lines = slice(source(), bytes, n).split('\n');
  const body = lines.map((line, i) =>
    i % 5 === 0 ? `-${line}\n+${line.replace(/const/g, 'let')}` : ` ${line}`,
  );
  return `--- a/functions/engine/x.ts\n+++ b/functions/engine/x.ts\n@@ -1,${lines.length} +1,${lines.length} @@\n${body.join('\n')}`.slice(
    0,
    bytes,
  );
}

/** A JSON document of about `bytes` characters: package-lock entries. */
function document(bytes: number, n: number): Record<string, unknown> {
  const entries = lockEntries();
  const out: Record<string, unknown> = {};
  let size = 2;
  for (let i = (n * 31) % entries.length; size < bytes; i = (i + 1) % entries.length) {
    const [name, value] = entries[i] as [string, unknown];
    const add = JSON.stringify(name).length + JSON.stringify(value).length + 2;
    if (size + add > bytes && size > 2) break;
    out[name] = value;
    size += add;
  }
  return out;
}

/** Real arguments whose canonical JSON is about `bytes` long. */
export function realArguments(bytes: number, n: number): { target: string; n: number; document: unknown } {
  const budget = Math.max(16, bytes - 80);
  switch (n % 3) {
    case 0:
      return { target: 'patch', n, document: { patch: patch(budget, n) } };
    case 1:
      return {
        target: 'file',
        n,
        document: { path: 'functions/engine/x.ts', content: slice(source(), budget, n) },
      };
    default:
      return { target: 'json', n, document: document(budget, n) };
  }
}
