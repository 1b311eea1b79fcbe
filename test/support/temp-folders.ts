import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * Fresh temporary folders for a test file, each removed after the test that made it.
 *
 * @example
 * ```ts
 * const folder = useTempFolders('tool-ledger-lock-');
 * it('…', async () => { const dir = await folder(); });
 * ```
 */
export function useTempFolders(prefix: string): () => Promise<string> {
  const folders: string[] = [];
  afterEach(async () => {
    for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
  });
  return async () => {
    const path = await mkdtemp(join(tmpdir(), prefix));
    folders.push(path);
    return path;
  };
}
