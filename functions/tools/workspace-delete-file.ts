import { unlink } from 'node:fs/promises';
import * as z from 'zod/mini';
import { defineTool, type ReconcileVerdict, TerminalToolError } from '../domain/tool';
import type { ToolEnvironment } from './registry';
import {
  assertRealDir,
  failureBeforeCommit,
  resolveWorkspaceTarget,
  syncDir,
  tenantPath,
  throwIfAbortedBeforeCommit,
  workspacePathSchema,
} from './workspace-path';

/** Arguments of `workspace.delete_file`; `path` comes out normalized. */
export const deleteFileArguments = z.strictObject({ path: workspacePathSchema });

/**
 * What `workspace.delete_file` returns. `deleted` is `true` when this call removed the file, `false`
 * when it was already absent (the outcome the caller wanted either way), and `null` when reconcile
 * found the file absent but cannot tell who removed it.
 */
export interface DeleteFileResult {
  /** The normalized path. */
  path: string;
  /** See the interface. */
  deleted: boolean | null;
}

/**
 * `workspace.delete_file`: deletes a regular file under the tenant's workspace root. Requires approval. An
 * absent file (or a missing folder, or a file where a folder should be) succeeds with `deleted: false`, so the outcome is idempotent;
 * links on the path, and a file with a second name (a hard link), are refused (`path_escape`), folders
 * are not deleted (`not_a_file`).
 *
 * Reconcile: the file is absent → `applied`; a file is there → `not_applied` (running the delete
 * again is what the approved call asked for); a link on the path now → `unknown`.
 *
 * @example
 * ```ts
 * const tool = workspaceDeleteFile({ workspaceRoot: '.data/workspace' });
 * await tool.execute({ path: 'notes/a.txt' }, ctx); // { path: 'notes/a.txt', deleted: true }
 * ```
 */
export function workspaceDeleteFile(env: Pick<ToolEnvironment, 'workspaceRoot'>) {
  return defineTool({
    name: 'workspace.delete_file',
    description:
      'Deletes a file under the workspace root (needs a human approval). Succeeds with deleted=false ' +
      'when the file is already absent. Paths are relative; .. and symbolic links are refused.',
    effect: 'write',
    targetClass: 'filesystem',
    requiresApproval: true,
    schema: deleteFileArguments,

    async execute(args, ctx): Promise<DeleteFileResult> {
      try {
        throwIfAbortedBeforeCommit(ctx.signal);
        const target = await resolveWorkspaceTarget(env.workspaceRoot, tenantPath(ctx.tenant, args.path), {
          createParents: false,
        });
        if (target?.existing === undefined) return { path: args.path, deleted: false };
        throwIfAbortedBeforeCommit(ctx.signal);
        await assertRealDir(target.dir);
        try {
          await unlink(target.file);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { path: args.path, deleted: false };
          throw error;
        }
        await syncDir(target.dir);
        return { path: args.path, deleted: true };
      } catch (error) {
        // A file where a folder should be: nothing can exist at the path, which is what was asked.
        if (error instanceof TerminalToolError && error.code === 'not_a_directory') {
          return { path: args.path, deleted: false };
        }
        // unlink is atomic: when it throws, the file is still there.
        throw failureBeforeCommit(error);
      }
    },

    async reconcile(args, ctx): Promise<ReconcileVerdict> {
      try {
        const target = await resolveWorkspaceTarget(env.workspaceRoot, tenantPath(ctx.tenant, args.path), {
          createParents: false,
        });
        if (target?.existing === undefined) {
          const result: DeleteFileResult = { path: args.path, deleted: null };
          return { status: 'applied', result };
        }
        return { status: 'not_applied' };
      } catch (error) {
        if (error instanceof TerminalToolError && error.code === 'not_a_directory') {
          const result: DeleteFileResult = { path: args.path, deleted: null };
          return { status: 'applied', result };
        }
        if (error instanceof TerminalToolError && error.code === 'not_a_file')
          return { status: 'not_applied' };
        return { status: 'unknown' };
      }
    },
  });
}
