import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { defineTool, type ReconcileVerdict, TerminalToolError } from '../domain/tool';
import type { ToolEnvironment } from './registry';
import {
  assertRealDir,
  failureBeforeCommit,
  openForRead,
  resolveWorkspaceTarget,
  tenantPath,
  throwIfAbortedBeforeCommit,
  workspacePathSchema,
  writeFileAtomic,
} from './workspace-path';

/** Arguments of `workspace.write_file`; `path` comes out normalized. */
export const writeFileArguments = z.strictObject({
  path: workspacePathSchema,
  content: z.string().check(z.describe('The whole new content of the file, as UTF-8 text.')),
});

/** What `workspace.write_file` returns (and what reconcile reports when the write is found). */
export interface WriteFileResult {
  /** The normalized path. */
  path: string;
  /** Size of the content in UTF-8 bytes. */
  bytes: number;
  /** Lowercase hex SHA-256 of the content's UTF-8 bytes. */
  sha256: string;
}

function describeContent(relativePath: string, data: Buffer): WriteFileResult {
  return { path: relativePath, bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}

/**
 * `workspace.write_file`: replaces (or creates) a file under the tenant's workspace root with the
 * given text, atomically (temp file + rename), creating missing folders. Refuses symbolic links
 * anywhere on the path and a target with a second name (a hard link) at execute time (`path_escape`,
 * terminal). Reconcile reads the same tenant's file, so another tenant's writes cannot sway it.
 *
 * Reconcile reads the file: the content's hash → `applied`; absent, a folder, or another content →
 * `not_applied`. Another content cannot prove the write never happened (someone may have written
 * after it), but it is the only state this operation's write could have left besides "its content",
 * and running a whole-file write again converges to the same file: a retry costs nothing a
 * last-writer-wins write did not already allow. A link (symbolic or hard) on the path now → `unknown`.
 *
 * @example
 * ```ts
 * const tool = workspaceWriteFile({ workspaceRoot: '.data/workspace' });
 * await tool.execute(tool.schema.parse({ path: 'notes/a.txt', content: 'hi\n' }), ctx);
 * // { path: 'notes/a.txt', bytes: 3, sha256: '…' }
 * ```
 */
export function workspaceWriteFile(env: Pick<ToolEnvironment, 'workspaceRoot'>) {
  return defineTool({
    name: 'workspace.write_file',
    description:
      'Writes a UTF-8 text file under the workspace root, replacing it if it exists (atomically). ' +
      'Paths are relative, with / separators; .. and symbolic links are refused.',
    effect: 'write',
    targetClass: 'filesystem',
    schema: writeFileArguments,

    async execute(args, ctx): Promise<WriteFileResult> {
      const data = Buffer.from(args.content, 'utf8');
      try {
        throwIfAbortedBeforeCommit(ctx.signal);
        const target = await resolveWorkspaceTarget(env.workspaceRoot, tenantPath(ctx.tenant, args.path), {
          createParents: true,
        });
        if (target === undefined)
          throw new TerminalToolError('path_missing', 'the workspace folder could not be created');
        await writeFileAtomic(target.dir, target.name, data, {
          ...(target.existing === undefined ? {} : { mode: target.existing.mode & 0o777 }),
          async beforeCommit() {
            throwIfAbortedBeforeCommit(ctx.signal);
            await assertRealDir(target.dir);
          },
        });
      } catch (error) {
        // Everything above fails before the rename, and a failed rename changes nothing.
        throw failureBeforeCommit(error);
      }
      return describeContent(args.path, data);
    },

    async reconcile(args, ctx): Promise<ReconcileVerdict> {
      const expected = describeContent(args.path, Buffer.from(args.content, 'utf8'));
      try {
        const target = await resolveWorkspaceTarget(env.workspaceRoot, tenantPath(ctx.tenant, args.path), {
          createParents: false,
        });
        if (target?.existing === undefined || target.existing.size !== expected.bytes)
          return { status: 'not_applied' };
        const handle = await openForRead(target.file);
        if (handle === undefined) return { status: 'not_applied' };
        try {
          const actual = describeContent(args.path, await handle.readFile());
          return actual.sha256 === expected.sha256
            ? { status: 'applied', result: actual }
            : { status: 'not_applied' };
        } finally {
          await handle.close();
        }
      } catch (error) {
        if (error instanceof TerminalToolError && error.code !== 'path_escape')
          return { status: 'not_applied' };
        return { status: 'unknown' };
      }
    },
  });
}
