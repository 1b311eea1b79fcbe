import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';

/**
 * Local mode's data folder holds the ledger (arguments, results) and the workspace tools write to:
 * it is the user's alone. Before, it was left as the umask made it (0755 folders, 0644 files), so any
 * user of the machine could read every operation's arguments and results.
 */
describe('the data folder is readable only by its owner', () => {
  let parent: string;
  let stack: LocalStackProcess | undefined;

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  it('a data folder an older start left world-readable is 0700 after a start, and so are its ledger and workspace', async () => {
    parent = await mkdtemp(join(tmpdir(), 'tool-ledger-folder-mode-'));
    const dataDir = join(parent, 'data');
    await mkdir(join(dataDir, 'ledger'), { recursive: true });
    await mkdir(join(dataDir, 'workspace'), { recursive: true });
    for (const folder of [dataDir, join(dataDir, 'ledger'), join(dataDir, 'workspace')])
      await chmod(folder, 0o755);
    stack = await startLocalStack({ dataDir });
    for (const folder of [dataDir, join(dataDir, 'ledger'), join(dataDir, 'workspace')]) {
      expect((await stat(folder)).mode & 0o777, folder).toBe(0o700);
    }
  });
});
