import { constants } from 'node:fs';
import { type FileHandle, lstat, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import {
  defineTool,
  type ReconcileVerdict,
  TerminalToolError,
  type ToolContext,
  UncertainOutcomeError,
} from '../domain/tool';
import type { ToolEnvironment } from './registry';
import {
  assertRealDir,
  failureBeforeCommit,
  openForRead,
  openNoFollow,
  RESERVED_DIR,
  resolveWorkspaceTarget,
  throwIfAbortedBeforeCommit,
  workspacePathSchema,
  writeFileAtomic,
} from './workspace-path';

/** Arguments of `workspace.append_line`; `path` comes out normalized. */
export const appendLineArguments = z
  .object({
    path: workspacePathSchema,
    line: z
      .string()
      .regex(/^[^\r\n]*$/, 'line must not contain CR or LF')
      .describe('One line of text, without a line break; a newline is added.'),
  })
  .strict();

/** What `workspace.append_line` returns. */
export interface AppendLineResult {
  /** The normalized path. */
  path: string;
  /** Bytes appended: the line's UTF-8 size plus the newline. */
  bytes: number;
}

/**
 * The operation's marker, one file per attempt at `.tool-ledger/markers/<downstream key>/<attempt>.json`.
 * `intent` is made durable before the append starts and `done` replaces it once the append is.
 */
interface AppendMarker {
  v: 1;
  state: 'intent' | 'done';
  attempt: number;
  path: string;
  bytes: number;
}

/** Folder of the markers, relative to the workspace root. */
export const MARKERS_DIR = `${RESERVED_DIR}/markers`;

/** Options of {@link workspaceAppendLine}. */
export interface AppendLineOptions {
  /**
   * The reconciler sees the same workspace files as every executor (a file system shared by all
   * functions). Only then does a missing marker prove that an attempt never appended, and reconcile may
   * answer `not_applied` for it. Off by default, as SPEC §4 says: "reconcile looks for the operation's
   * marker, else `unknown`". @default false
   */
  sharedWorkspace?: boolean;
}

function markerPath(downstreamKey: string, attempt: number): string {
  // The key is the engine's, not the caller's; still, it becomes a folder name, so check its alphabet.
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(downstreamKey) || !Number.isSafeInteger(attempt) || attempt < 0) {
    throw new TerminalToolError('invalid_context', 'the downstream key or attempt cannot name a marker');
  }
  return `${MARKERS_DIR}/${downstreamKey}/${attempt}.json`;
}

async function writeMarker(root: string, ctx: ToolContext, marker: AppendMarker): Promise<void> {
  const target = await resolveWorkspaceTarget(root, markerPath(ctx.downstreamKey, ctx.attempt), {
    createParents: true,
  });
  if (target === undefined) throw new Error('the marker folder could not be created');
  await writeFileAtomic(target.dir, target.name, Buffer.from(JSON.stringify(marker), 'utf8'));
}

async function removeMarker(root: string, ctx: ToolContext): Promise<void> {
  try {
    const target = await resolveWorkspaceTarget(root, markerPath(ctx.downstreamKey, ctx.attempt), {
      createParents: false,
    });
    if (target?.existing !== undefined) await unlink(target.file);
  } catch {
    // Best effort: an attempt known not applied is never reconciled, so a stale intent is harmless.
  }
}

function isMarker(value: unknown): value is AppendMarker {
  const marker = value as Partial<AppendMarker> | null;
  return (
    typeof marker === 'object' &&
    marker !== null &&
    marker.v === 1 &&
    (marker.state === 'intent' || marker.state === 'done') &&
    typeof marker.attempt === 'number' &&
    typeof marker.path === 'string' &&
    typeof marker.bytes === 'number'
  );
}

/** Every marker of the operation, by attempt; empty when there are none. Throws when one is unreadable. */
async function readMarkers(root: string, downstreamKey: string): Promise<Map<number, AppendMarker>> {
  const markers = new Map<number, AppendMarker>();
  const probe = await resolveWorkspaceTarget(root, markerPath(downstreamKey, 0), { createParents: false });
  if (probe === undefined) return markers;
  for (const entry of await readdir(probe.dir)) {
    const match = /^(\d{1,15})\.json$/.exec(entry);
    if (!match) continue;
    const handle = await openForRead(path.join(probe.dir, entry));
    if (handle === undefined) continue;
    let marker: unknown;
    try {
      marker = JSON.parse(await handle.readFile('utf8'));
    } finally {
      await handle.close();
    }
    if (!isMarker(marker) || marker.attempt !== Number(match[1])) throw new Error('a marker is malformed');
    markers.set(marker.attempt, marker);
  }
  return markers;
}

/**
 * `workspace.append_line`: appends `line` + `\n` to a file under the workspace root, creating it and
 * its folders. Deliberately NOT idempotent: running it twice appends twice, which is what the ledger
 * exists to prevent.
 *
 * So that reconcile can answer, each attempt leaves a marker in `.tool-ledger/markers/`, keyed by the
 * downstream key and the attempt:
 *
 * ```
 * write intent marker (fsync) ──► append (fsync) ──► replace with done marker (fsync)
 *   crash here: no marker           crash here: intent     crash here: intent (appended!)
 *   → not_applied                   → unknown              → unknown
 * ```
 *
 * Reconcile: a `done` marker of any attempt → `applied`; this attempt's `intent` alone → `unknown`
 * (the append may or may not have happened, and the file's bytes cannot tell this line from an
 * identical one); no marker of this attempt → `not_applied`, because the append starts only after the
 * intent is durable and the attempt is over by the time it is reconciled (its execute returned, or its
 * lease, longer than its hard deadline, expired) — but only with a shared workspace (see
 * {@link AppendLineOptions}), else `unknown`.
 *
 * @example
 * ```ts
 * const tool = workspaceAppendLine({ workspaceRoot: '.data/workspace', local: true });
 * await tool.execute({ path: 'log.txt', line: 'deployed' }, ctx); // { path: 'log.txt', bytes: 9 }
 * ```
 */
export function workspaceAppendLine(
  env: Pick<ToolEnvironment, 'workspaceRoot' | 'local'>,
  options: AppendLineOptions = {},
) {
  const sharedWorkspace = options.sharedWorkspace ?? false;
  return defineTool({
    name: 'workspace.append_line',
    description:
      'Appends one line of text (plus a newline) to a file under the workspace root, creating it if ' +
      'needed. Not idempotent by itself: the ledger makes it run once. Paths are relative; .. and ' +
      'symbolic links are refused.',
    effect: 'write',
    targetClass: 'filesystem',
    schema: appendLineArguments,

    async execute(args, ctx): Promise<AppendLineResult> {
      const data = Buffer.from(`${args.line}\n`, 'utf8');
      const marker: AppendMarker = {
        v: 1,
        state: 'intent',
        attempt: ctx.attempt,
        path: args.path,
        bytes: data.length,
      };
      let handle: FileHandle | undefined;
      try {
        throwIfAbortedBeforeCommit(ctx.signal);
        const target = await resolveWorkspaceTarget(env.workspaceRoot, args.path, { createParents: true });
        if (target === undefined)
          throw new TerminalToolError('path_missing', 'the workspace folder could not be created');
        await writeMarker(env.workspaceRoot, ctx, marker);
        handle = await openNoFollow(target.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
        const opened = await handle.stat();
        if (!opened.isFile())
          throw new TerminalToolError('not_a_file', 'the path names a special file, not a regular file');
        // The open did not follow a link at the file; make sure no folder on the way became one.
        await assertRealDir(target.dir);
        const now = await lstat(target.file);
        if (now.ino !== opened.ino || now.dev !== opened.dev) {
          throw new TerminalToolError('path_escape', 'the file changed while it was being opened');
        }
        throwIfAbortedBeforeCommit(ctx.signal);
      } catch (error) {
        await handle?.close().catch(() => undefined);
        await removeMarker(env.workspaceRoot, ctx);
        throw failureBeforeCommit(error);
      }

      // Commit point: from the first byte written, the effect may have happened.
      let written = 0;
      try {
        while (written < data.length) {
          const { bytesWritten } = await handle.write(data, written);
          if (bytesWritten === 0) throw new Error('the file system accepted no bytes');
          written += bytesWritten;
        }
        await handle.datasync();
      } catch (error) {
        await handle.close().catch(() => undefined);
        if (written === 0) {
          await removeMarker(env.workspaceRoot, ctx);
          throw failureBeforeCommit(error);
        }
        throw written < data.length
          ? new UncertainOutcomeError(
              'append_incomplete',
              'part of the line was appended before the write failed',
            )
          : new UncertainOutcomeError(
              'append_unconfirmed',
              'the line was appended but could not be flushed to disk',
            );
      }
      await handle.close().catch(() => undefined);

      try {
        await writeMarker(env.workspaceRoot, ctx, { ...marker, state: 'done' });
      } catch {
        // The line is durable: this is a success. Only a later reconcile (if this outcome were lost)
        // would miss the marker, and it then answers `unknown`, never `not_applied`.
        ctx.logger.warn('append marker not written', { code: 'marker_write_failed' });
      }
      return { path: args.path, bytes: data.length };
    },

    async reconcile(args, ctx): Promise<ReconcileVerdict> {
      try {
        const markers = await readMarkers(env.workspaceRoot, ctx.downstreamKey);
        const own = markers.get(ctx.attempt);
        if (own !== undefined && own.path !== args.path) return { status: 'unknown' };
        const done = [own, ...[...markers.values()].sort((a, b) => b.attempt - a.attempt)].find(
          (marker) => marker?.state === 'done' && marker.path === args.path,
        );
        if (done !== undefined) {
          const result: AppendLineResult = { path: done.path, bytes: done.bytes };
          return { status: 'applied', result };
        }
        if (own !== undefined) return { status: 'unknown' };
        return sharedWorkspace ? { status: 'not_applied' } : { status: 'unknown' };
      } catch {
        return { status: 'unknown' };
      }
    },
  });
}
