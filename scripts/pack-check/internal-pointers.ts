import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A pointer at the project's internal design brief, which users never receive: a "SPEC §N" (or
 * "SPEC section N", "SPEC.md") citation, or a path into the workspace's `../shared/` folder. What
 * ships cites the package's own contract (docs/contract.md) instead, or says the rule in words.
 */
export const INTERNAL_POINTER = /\bSPEC(?: §| section\b|\.md\b)|\.\.\/shared\//;

/**
 * The files below `dir` (recursively, outside any `node_modules` or `.git`) whose text holds an
 * {@link INTERNAL_POINTER}, as paths relative to `dir`.
 *
 * @example
 * ```ts
 * await internalPointers('node_modules/tool-ledger'); // [] when the package is clean
 * ```
 */
export async function internalPointers(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const file of await readdir(dir, { recursive: true })) {
    const parts = file.split(path.sep);
    if (parts.includes('node_modules') || parts.includes('.git')) continue;
    const text = await readFile(path.join(dir, file), 'utf8').catch(() => '');
    if (INTERNAL_POINTER.test(text)) found.push(file);
  }
  return found.sort();
}
