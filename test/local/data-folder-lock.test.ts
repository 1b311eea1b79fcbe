import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DataFolderInUseError,
  LOCK_FILE,
  lockDataFolder,
  lockHolder,
} from '../../functions/local/data-folder-lock';
import { useTempFolders } from '../support/temp-folders';

/** The data folder's lock: one holder, named; a dead holder's lock is taken over. */

const folder = useTempFolders('tool-ledger-lock-');

describe('data folder lock', () => {
  it('refuses a second holder and names the first', async () => {
    const dir = await folder();
    const lock = await lockDataFolder(dir);
    const error = await lockDataFolder(dir, process.pid + 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataFolderInUseError);
    expect((error as DataFolderInUseError).pid).toBe(process.pid);
    expect((error as Error).message).toContain(`in use by process ${process.pid}`);
    await lock.release();
    expect(await lockHolder(dir)).toBeUndefined();
  });

  it('takes over a lock whose process is gone', async () => {
    const dir = await folder();
    await writeFile(join(dir, LOCK_FILE), '4194305\n');
    const lock = await lockDataFolder(dir);
    expect(await lockHolder(dir)).toBe(process.pid);
    await lock.release();
  });

  it('takes over a lock whose pid now belongs to a process started later', async () => {
    const dir = await folder();
    // This process's pid with a start time it does not have: the holder died and the pid was reused.
    await writeFile(join(dir, LOCK_FILE), `${process.pid} 1\n`);
    const lock = await lockDataFolder(dir, process.pid + 1);
    expect((await readFile(join(dir, LOCK_FILE), 'utf8')).trim().split(' ')[0]).toBe(String(process.pid + 1));
    await lock.release();
  });

  it('leaves a lock that another process has taken since', async () => {
    const dir = await folder();
    const lock = await lockDataFolder(dir);
    await writeFile(join(dir, LOCK_FILE), '4194305\n');
    await lock.release();
    expect(await lockHolder(dir)).toBe(4194305);
  });
});
