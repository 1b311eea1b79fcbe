import { constants } from 'node:fs';
import { type FileHandle, lstat } from 'node:fs/promises';
import * as z from 'zod/mini';
import { defineTool, type ReconcileVerdict, TerminalToolError, UncertainOutcomeError } from '../domain/tool';
import { type AppendMarker, readMarkers, removeMarker, sweepMarkers, writeMarker } from './append-markers';
import type { ToolEnvironment } from './registry';
import {
  assertRealDir,
  failureBeforeCommit,
  hardLinkRefused,
  openNoFollow,
  resolveWorkspaceTarget,
  tenantPath,
  throwIfAbortedBeforeCommit,
  workspacePathSchema,
} from './workspace-path';

/** Arguments of `workspace.append_line`; `path` comes out normalized. */
export const appendLineArguments = z.strictObject({
  path: workspacePathSchema,
  line: z
    .string()
    .check(
      z.regex(/^[^\r\n]*$/, 'line must not contain CR or LF'),
      z.describe('One line of text, without a line break; a newline is added.'),
    ),
});

/** What `workspace.append_line` returns. */
export interface AppendLineResult {
  /** The normalized path. */
  path: string;
  /** Bytes appended: the line's UTF-8 size plus the newline. */
  bytes: number;
}

/** Options of {@link workspaceAppendLine}. */
export interface AppendLineOptions {
  /**
   * The reconciler sees the same workspace files as every executor (a file system shared by all
   * functions). Only then does a missing marker prove that an attempt never appended, and reconcile may
   * answer `not_applied` for it. Off by default, so reconcile
   * looks for the operation's marker and answers `unknown` without it. @default false
   */
  sharedWorkspace?: boolean;
  /**
   * How often, at most, a successful attempt also starts a sweep of its tenant's expired markers
   * ({@link sweepMarkers}, in the background, at most 500 folders), ms; 0 turns it off.
   * @default 3600000 (an hour)
   */
  sweepEveryMs?: number;
  /** The clock of the sweep. @default Date.now */
  clock?: () => number;
}

/** Marker folders looked at by one sweep started by an attempt, so that it stays short. */
const SWEEP_FOLDERS_PER_SWEEP = 500;

/**
 * `workspace.append_line`: appends `line` + `\n` to a file under the tenant's workspace root, creating
 * it and its folders. Deliberately NOT idempotent: running it twice appends twice, which is what the
 * ledger exists to prevent. It never writes through a link: a symbolic link on the path, or a file
 * with a second name (a hard link, which may be a file outside the workspace), is `path_escape`.
 *
 * So that reconcile can answer, each attempt leaves a marker in the tenant's `.tool-ledger/markers/`,
 * keyed by the downstream key (one per reservation, see functions/tools/append-markers.ts) and the
 * attempt:
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
 * await tool.execute({ path: 'log.txt', line: 'deployed' }, ctx); // .data/workspace/<tenant>/log.txt
 * ```
 */
export function workspaceAppendLine(
  env: Pick<ToolEnvironment, 'workspaceRoot' | 'local' | 'retentionSeconds'>,
  options: AppendLineOptions = {},
) {
  const sharedWorkspace = options.sharedWorkspace ?? false;
  const sweepEveryMs = options.sweepEveryMs ?? 3_600_000;
  const clock = options.clock ?? Date.now;
  const retentionSeconds = env.retentionSeconds ?? 2_592_000;
  /** When each tenant's markers were last swept by this process. */
  const lastSweep = new Map<string, number>();
  // Not awaited by the attempt: the line is already durable, and a sweep still running at the hard
  // deadline must not turn a known success into an uncertain outcome.
  const sweepIfDue = (tenant: string): void => {
    const now = clock();
    if (sweepEveryMs <= 0 || now - (lastSweep.get(tenant) ?? Number.NEGATIVE_INFINITY) < sweepEveryMs) return;
    lastSweep.set(tenant, now);
    sweepMarkers(env.workspaceRoot, tenant, {
      retentionSeconds,
      now,
      maxFolders: SWEEP_FOLDERS_PER_SWEEP,
    }).catch(() => undefined);
  };
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
        const target = await resolveWorkspaceTarget(env.workspaceRoot, tenantPath(ctx.tenant, args.path), {
          createParents: true,
        });
        if (target === undefined)
          throw new TerminalToolError('path_missing', 'the workspace folder could not be created');
        await writeMarker(env.workspaceRoot, ctx, marker);
        handle = await openNoFollow(target.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
        const opened = await handle.stat();
        if (!opened.isFile())
          throw new TerminalToolError('not_a_file', 'the path names a special file, not a regular file');
        // Checked on the open file itself: a second name planted after the walk is caught here.
        if (opened.nlink > 1) throw hardLinkRefused();
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
      sweepIfDue(ctx.tenant);
      return { path: args.path, bytes: data.length };
    },

    async reconcile(args, ctx): Promise<ReconcileVerdict> {
      try {
        const markers = await readMarkers(env.workspaceRoot, ctx.tenant, ctx.downstreamKey);
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
