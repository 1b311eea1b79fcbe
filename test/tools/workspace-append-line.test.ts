import { link, mkdir, readdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NotAppliedError, type ToolContext } from '../../functions/domain/tool';
import {
  MARKER_SWEEP_MARGIN_SECONDS,
  MARKERS_DIR,
  markersFolder,
  sweepMarkers,
} from '../../functions/tools/append-markers';
import { workspaceAppendLine } from '../../functions/tools/workspace-append-line';
import { workspaceWriteFile } from '../../functions/tools/workspace-write-file';
import { tempDirs, toolContext } from './tool-context';

// Fault injection only: the file system is real; a marker's commit (its rename) can be made to fail.
const faults = vi.hoisted(() => ({ markerRenames: 0, failMarkerRename: (_n: number): boolean => false }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    rename: async (from: string, to: string) => {
      if (String(to).includes('/.tool-ledger/markers/')) {
        faults.markerRenames += 1;
        if (faults.failMarkerRename(faults.markerRenames)) {
          throw Object.assign(new Error('injected I/O error'), { code: 'EIO' });
        }
      }
      return actual.rename(from, to);
    },
  };
});

describe('workspace.append_line', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  let tool: ReturnType<typeof workspaceAppendLine>;
  let ctx: ToolContext;
  beforeEach(async () => {
    dirs = await tempDirs();
    await mkdir(dirs.outside, { recursive: true });
    tool = workspaceAppendLine({ workspaceRoot: dirs.root, local: true });
    ctx = toolContext();
    faults.markerRenames = 0;
    faults.failMarkerRename = () => false;
  });
  afterEach(() => dirs.cleanup());

  const args = (line = 'deployed v1', p = 'logs//deploy.log') => tool.schema.parse({ path: p, line });
  const content = () => readFile(path.join(dirs.home, 'logs/deploy.log'), 'utf8');
  const markerFile = (c: ToolContext, attempt = c.attempt) =>
    path.join(dirs.home, MARKERS_DIR, c.downstreamKey, `${attempt}.json`);

  it('refuses line breaks, reserved paths and unknown keys in the schema', () => {
    expect(tool.schema.safeParse({ path: 'a.log', line: 'two\nlines' }).success).toBe(false);
    expect(tool.schema.safeParse({ path: 'a.log', line: 'carriage\rreturn' }).success).toBe(false);
    expect(tool.schema.safeParse({ path: '.tool-ledger/markers/k/1.json', line: 'x' }).success).toBe(false);
    expect(tool.schema.safeParse({ path: 'a.log', line: 'x', newline: false }).success).toBe(false);
    expect(tool.schema.parse({ path: './a.log', line: '' })).toEqual({ path: 'a.log', line: '' });
  });

  it('appends the line and a newline, creating the file and its folder', async () => {
    expect(await tool.execute(args('héllo'), ctx)).toEqual({ path: 'logs/deploy.log', bytes: 7 });
    await tool.execute(args('second'), toolContext());
    expect(await content()).toBe('héllo\nsecond\n');
  });

  it('is deliberately not idempotent: the same call run twice appends twice', async () => {
    await tool.execute(args(), ctx);
    await tool.execute(args(), ctx);
    expect(await content()).toBe('deployed v1\ndeployed v1\n');
  });

  it('leaves a done marker keyed by downstream key and attempt, which the other tools cannot forge', async () => {
    await tool.execute(args(), ctx);
    expect(JSON.parse(await readFile(markerFile(ctx), 'utf8'))).toMatchObject({ state: 'done', attempt: 1 });
    const writer = workspaceWriteFile({ workspaceRoot: dirs.root });
    const forged = `${MARKERS_DIR}/${ctx.downstreamKey}/2.json`;
    expect(writer.schema.safeParse({ path: forged, content: '{}' }).success).toBe(false);
  });

  it('refuses a link planted in the workspace, appending nothing outside', async () => {
    await mkdir(dirs.home, { recursive: true });
    await writeFile(path.join(dirs.outside, 'victim.log'), 'original\n');
    await symlink(dirs.outside, path.join(dirs.home, 'logs'));
    await expect(tool.execute(args('x', 'logs/victim.log'), ctx)).rejects.toMatchObject({
      code: 'path_escape',
    });
    await symlink(path.join(dirs.outside, 'victim.log'), path.join(dirs.home, 'direct.log'));
    await expect(tool.execute(args('x', 'direct.log'), ctx)).rejects.toMatchObject({ code: 'path_escape' });
    expect(await readFile(path.join(dirs.outside, 'victim.log'), 'utf8')).toBe('original\n');
  });

  it('is known not applied when aborted before the append, and leaves no marker', async () => {
    const controller = new AbortController();
    controller.abort();
    const aborted = toolContext({ signal: controller.signal });
    await expect(tool.execute(args(), aborted)).rejects.toBeInstanceOf(NotAppliedError);
    await expect(readFile(markerFile(aborted))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  describe('reconcile', () => {
    it('is applied, with execute’s result, when the attempt’s done marker exists', async () => {
      const executed = await tool.execute(args(), ctx);
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'applied', result: executed });
    });

    it('is applied when an earlier attempt of the operation left a done marker', async () => {
      await tool.execute(args(), ctx);
      expect(await tool.reconcile?.(args(), { ...ctx, attempt: 2 })).toMatchObject({ status: 'applied' });
    });

    it('crash window: line appended but done marker missing → unknown, never not_applied', async () => {
      faults.failMarkerRename = (n) => n === 2; // the intent commits, the done marker does not
      const warn = vi.fn();
      const result = await tool.execute(args(), { ...ctx, logger: { info: () => undefined, warn } });
      expect(result).toEqual({ path: 'logs/deploy.log', bytes: 12 });
      expect(await content()).toBe('deployed v1\n');
      expect(warn).toHaveBeenCalledWith('append marker not written', { code: 'marker_write_failed' });
      expect(JSON.parse(await readFile(markerFile(ctx), 'utf8'))).toMatchObject({ state: 'intent' });
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
    });

    it('intent durable but the append never happened (crash before it) → still unknown', async () => {
      await mkdir(path.dirname(markerFile(ctx)), { recursive: true });
      const intent = { v: 1, state: 'intent', attempt: 1, path: 'logs/deploy.log', bytes: 12 };
      await writeFile(markerFile(ctx), JSON.stringify(intent));
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
    });

    it('no marker at all is unknown by default (SPEC §4), and not applied only with a shared workspace', async () => {
      faults.failMarkerRename = (n) => n === 1; // the intent itself cannot be committed
      await expect(tool.execute(args(), ctx)).rejects.toMatchObject({ code: 'fs_eio' });
      await expect(content()).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
      const shared = workspaceAppendLine(
        { workspaceRoot: dirs.root, local: true },
        { sharedWorkspace: true },
      );
      expect(await shared.reconcile?.(args(), ctx)).toEqual({ status: 'not_applied' });
    });

    it('is unknown for a missing marker when the workspace is not shared with the reconciler', async () => {
      const isolated = workspaceAppendLine({ workspaceRoot: dirs.root, local: false });
      expect(await isolated.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
      const shared = workspaceAppendLine(
        { workspaceRoot: dirs.root, local: false },
        { sharedWorkspace: true },
      );
      expect(await shared.reconcile?.(args(), ctx)).toEqual({ status: 'not_applied' });
    });

    it('is unknown when a marker is malformed or names another path', async () => {
      await mkdir(path.dirname(markerFile(ctx)), { recursive: true });
      await writeFile(markerFile(ctx), '{not json');
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
      const other = { v: 1, state: 'done', attempt: 1, path: 'other.log', bytes: 12 };
      await writeFile(markerFile(ctx), JSON.stringify(other));
      expect(await tool.reconcile?.(args(), ctx)).toEqual({ status: 'unknown' });
    });

    it('keeps one marker per attempt and nothing else in the markers folder', async () => {
      await tool.execute(args(), ctx);
      await tool.execute(args(), { ...ctx, attempt: 2 });
      expect((await readdir(path.dirname(markerFile(ctx)))).sort()).toEqual(['1.json', '2.json']);
    });
  });
});

describe('workspace.append_line: links, reservations and the marker sweep', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  let tool: ReturnType<typeof workspaceAppendLine>;
  beforeEach(async () => {
    dirs = await tempDirs();
    await mkdir(dirs.outside, { recursive: true });
    tool = workspaceAppendLine({ workspaceRoot: dirs.root, local: true }, { sweepEveryMs: 0 });
    faults.failMarkerRename = () => false;
  });
  afterEach(() => dirs.cleanup());

  const args = (line = 'x', p = 'log.txt') => tool.schema.parse({ path: p, line });

  it('never writes through a hard link to a file outside the workspace', async () => {
    await writeFile(path.join(dirs.outside, 'victim.log'), 'original\n');
    await mkdir(dirs.home, { recursive: true });
    await link(path.join(dirs.outside, 'victim.log'), path.join(dirs.home, 'log.txt'));
    await expect(tool.execute(args(), toolContext())).rejects.toMatchObject({ code: 'path_escape' });
    expect(await readFile(path.join(dirs.outside, 'victim.log'), 'utf8')).toBe('original\n');
  });

  it('a new reservation of the same operation ID never finds the old one’s done marker', async () => {
    const old = toolContext({ operationId: 'op-reused' });
    await tool.execute(args(), old);
    const reused = toolContext({ operationId: 'op-reused' }); // same ID, new reservation
    expect(reused.downstreamKey).not.toBe(old.downstreamKey);
    expect(await tool.reconcile?.(args(), reused)).toEqual({ status: 'unknown' });
    expect(await tool.reconcile?.(args(), old)).toMatchObject({ status: 'applied' });
  });

  it('keeps each tenant’s markers in its own root', async () => {
    const a = toolContext({ tenant: 'tenant-a' });
    await tool.execute(args(), a);
    expect(await readdir(markersFolder(dirs.root, 'tenant-a', a.downstreamKey))).toEqual(['1.json']);
    expect(await tool.reconcile?.(args(), { ...a, tenant: 'tenant-b' })).toEqual({ status: 'unknown' });
  });

  it('the sweep removes expired done markers and keeps young ones and unknown outcomes', async () => {
    const done = toolContext();
    const young = toolContext();
    const unknown = toolContext();
    await tool.execute(args(), done);
    await tool.execute(args(), young);
    faults.failMarkerRename = (n) => n % 2 === 0; // the done marker of this attempt is never written
    faults.markerRenames = 0;
    await tool.execute(args(), unknown);
    faults.failMarkerRename = () => false;
    const retentionSeconds = 1_000;
    const now = Date.now() + (retentionSeconds + MARKER_SWEEP_MARGIN_SECONDS) * 1000;
    const past = new Date(Date.now() - 10_000);
    for (const c of [done, unknown]) {
      const folder = markersFolder(dirs.root, 'acme', c.downstreamKey);
      await utimes(path.join(folder, '1.json'), past, past);
    }
    // `young` was written now: keep it by moving "now" to just before its own expiry.
    const youngFolder = markersFolder(dirs.root, 'acme', young.downstreamKey);
    await utimes(path.join(youngFolder, '1.json'), new Date(now), new Date(now));
    expect(await sweepMarkers(dirs.root, 'acme', { retentionSeconds, now })).toEqual({ removed: 1, kept: 2 });
    await expect(readdir(markersFolder(dirs.root, 'acme', done.downstreamKey))).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect(await readdir(youngFolder)).toEqual(['1.json']);
    expect(await tool.reconcile?.(args(), unknown)).toEqual({ status: 'unknown' });
    expect(await sweepMarkers(dirs.root, 'nobody', { retentionSeconds, now })).toEqual({
      removed: 0,
      kept: 0,
    });
  });
});
