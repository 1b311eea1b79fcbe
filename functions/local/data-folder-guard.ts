import { accessSync, constants, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { logger } from '../observability/logger';

/**
 * Fail closed when the data folder goes away. LevelDB keeps its files open: a data folder deleted
 * while local mode runs would go on answering from unlinked files, a ledger that vanishes at the next
 * restart (and with it the record that an effect already ran, so it runs again). The guard is asked
 * before every request to the local DynamoDB (synchronously: two `stat` and two `access` calls take
 * microseconds, while the same calls on the thread pool queued behind LevelDB's own work and were a
 * twentieth of local mode's time under load); once the folder is gone, replaced, or no longer
 * writable, the request is refused, which the ledger store reports as `ledger_unavailable` (503,
 * nothing ran). A deleted or replaced folder stays refused until a restart (its files are gone; a
 * folder created in its place is a new, empty ledger that only a fresh start may open); a folder that
 * stopped being writable is refused while it stays so.
 */

/** Why the ledger is refused. */
export type DataFolderProblem = 'data_folder_missing' | 'data_folder_replaced' | 'data_folder_read_only';

/** Identity of a folder: the same path can name a new folder after a delete. */
interface FolderIdentity {
  path: string;
  dev: number;
  ino: number;
}

/**
 * Watches the data folder and the ledger folder inside it.
 *
 * @example
 * ```ts
 * const guard = await DataFolderGuard.watch(['.data', '.data/ledger']);
 * if (guard.check() !== undefined) refuse();
 * ```
 */
export class DataFolderGuard {
  private lost: DataFolderProblem | undefined;

  private constructor(private readonly folders: readonly FolderIdentity[]) {}

  /** Remembers the identity of each folder as it is now (they must exist). */
  static async watch(paths: readonly string[]): Promise<DataFolderGuard> {
    const folders: FolderIdentity[] = [];
    for (const path of paths) {
      const s = await stat(path);
      folders.push({ path, dev: s.dev, ino: s.ino });
    }
    return new DataFolderGuard(folders);
  }

  /** Undefined while every folder is the one watched and writable; otherwise what is wrong. */
  check(): DataFolderProblem | undefined {
    if (this.lost) return this.lost;
    for (const folder of this.folders) {
      let now: { dev: number; ino: number; mode: number };
      try {
        now = statSync(folder.path);
      } catch {
        return this.lose('data_folder_missing');
      }
      if (now.dev !== folder.dev || now.ino !== folder.ino) return this.lose('data_folder_replaced');
      // `access` answers for this user (root may always write); no write bit at all is `chmod a-w`,
      // which means "do not write here" for root too.
      if ((now.mode & 0o222) === 0) return 'data_folder_read_only';
      try {
        accessSync(folder.path, constants.W_OK);
      } catch {
        return 'data_folder_read_only';
      }
    }
    return undefined;
  }

  private lose(problem: DataFolderProblem): DataFolderProblem {
    if (!this.lost) {
      logger.error('data folder lost: the ledger refuses every request until a restart', {
        outcome_code: problem,
      });
    }
    this.lost = problem;
    return problem;
  }
}
