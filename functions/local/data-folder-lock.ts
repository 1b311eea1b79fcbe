import { readFileSync } from 'node:fs';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SETTINGS } from '../contract/environment';

/**
 * One process per data folder. Two stacks on one folder would be two ledgers over one set of files
 * (LevelDB allows one, and the loser crashed with `Database is closed`), so a start first takes the
 * folder's lock file, which names its holder's pid (and, on Linux, the holder's start time, so that a
 * pid the system has since given to another process is not mistaken for the holder). A lock whose
 * holder is dead is stale (it was killed) and is taken over. LevelDB's own lock on the ledger folder stays the last word: a race
 * between two starts that both saw a stale lock ends with one of them refused by LevelDB.
 */

/** Name of the lock file inside the data folder. */
export const LOCK_FILE = 'tool-ledger.lock';

/** The data folder is in use by a live process. */
export class DataFolderInUseError extends Error {
  /** Stable code, for scripts. */
  readonly code = 'data_folder_in_use';

  constructor(
    readonly dataDir: string,
    /** The pid that holds it, when the lock file names one. */
    readonly pid: number | undefined,
  ) {
    super(
      `the data folder ${dataDir} is in use by ${pid === undefined ? 'another process' : `process ${pid}`}` +
        ` (one tool-ledger per data folder: stop it, or set ${SETTINGS.dataDir.name} to another folder)`,
    );
    this.name = 'DataFolderInUseError';
  }
}

/** A held lock. */
export interface DataFolderLock {
  /** Path of the lock file. */
  path: string;
  /** Removes the lock file if it still names this process. */
  release(): Promise<void>;
}

/**
 * Takes the data folder's lock for this process, or throws {@link DataFolderInUseError} naming the
 * live holder. The folder must exist.
 *
 * @example
 * ```ts
 * const lock = await lockDataFolder('.data');
 * // … run …
 * await lock.release();
 * ```
 */
export async function lockDataFolder(dataDir: string, pid: number = process.pid): Promise<DataFolderLock> {
  const path = join(dataDir, LOCK_FILE);
  // Two rounds: the second follows the removal of a stale lock.
  for (let round = 0; round < 2; round += 1) {
    try {
      const file = await open(path, 'wx');
      try {
        const start = startTime(pid);
        await file.writeFile(start === undefined ? `${pid}\n` : `${pid} ${start}\n`);
        await file.sync();
      } finally {
        await file.close();
      }
      return {
        path,
        async release() {
          if ((await readLock(dataDir))?.pid === pid) await rm(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await readLock(dataDir);
    if (holder !== undefined && holder.pid !== pid && isAlive(holder)) {
      throw new DataFolderInUseError(dataDir, holder.pid);
    }
    await rm(path, { force: true });
  }
  throw new DataFolderInUseError(dataDir, await lockHolder(dataDir));
}

/** The pid the folder's lock file names, if any. */
export async function lockHolder(dataDir: string): Promise<number | undefined> {
  return (await readLock(dataDir))?.pid;
}

interface LockContent {
  pid: number;
  startTime: string | undefined;
}

async function readLock(dataDir: string): Promise<LockContent | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, LOCK_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const [pidText, start] = text.trim().split(' ');
  const pid = Number(pidText);
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, startTime: start || undefined } : undefined;
}

/** Signal 0 checks existence only; EPERM means it exists under another user. */
function isAlive(holder: LockContent): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(holder.pid);
  return holder.startTime === undefined || now === undefined || now === holder.startTime;
}

/**
 * A process's start time in clock ticks since boot (Linux `/proc/<pid>/stat`, field 22), or undefined
 * where there is no `/proc`. The command name (field 2) may contain spaces and parentheses, so fields
 * are counted after its closing parenthesis.
 */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
