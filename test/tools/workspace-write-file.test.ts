import { createHash } from 'node:crypto';
import { chmod, link, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotAppliedError, TerminalToolError } from '../../functions/domain/tool';
import { workspaceWriteFile } from '../../functions/tools/workspace-write-file';
import { tempDirs, toolContext } from './tool-context';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('workspace.write_file', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  let tool: ReturnType<typeof workspaceWriteFile>;
  beforeEach(async () => {
    dirs = await tempDirs();
    await mkdir(dirs.outside, { recursive: true });
    tool = workspaceWriteFile({ workspaceRoot: dirs.root });
  });
  afterEach(() => dirs.cleanup());

  it('is a write tool on the filesystem, without approval', () => {
    expect(tool).toMatchObject({ name: 'workspace.write_file', effect: 'write', targetClass: 'filesystem' });
    expect(tool.requiresApproval).toBeUndefined();
  });

  it('refuses unknown keys and bad paths in the schema', () => {
    expect(tool.schema.safeParse({ path: 'a.txt', content: 'x', mode: 511 }).success).toBe(false);
    expect(tool.schema.safeParse({ path: '../a.txt', content: 'x' }).success).toBe(false);
    expect(tool.schema.safeParse({ path: '/tmp/a.txt', content: 'x' }).success).toBe(false);
    expect(tool.schema.parse({ path: 'a//b/./c.txt', content: 'x' })).toEqual({
      path: 'a/b/c.txt',
      content: 'x',
    });
  });

  it('writes the content, creating the root and missing folders, and returns its size and hash', async () => {
    const args = tool.schema.parse({ path: 'notes//day/./log.txt', content: 'héllo\n' });
    const result = await tool.execute(args, toolContext());
    expect(result).toEqual({ path: 'notes/day/log.txt', bytes: 7, sha256: sha256('héllo\n') });
    expect(await readFile(path.join(dirs.home, 'notes/day/log.txt'), 'utf8')).toBe('héllo\n');
  });

  it('writes under <workspace>/<tenant>/ with the tenant as it is named, and a hidden-looking tenant under .tenant-<sha256>', async () => {
    const args = tool.schema.parse({ path: 'notes.txt', content: 'x' });
    await tool.execute(args, toolContext({ tenant: 'Team_Payments.eu' }));
    expect(await readFile(path.join(dirs.root, 'Team_Payments.eu', 'notes.txt'), 'utf8')).toBe('x');
    await tool.execute(args, toolContext({ tenant: '.hidden' }));
    expect(await readFile(path.join(dirs.root, `.tenant-${sha256('.hidden')}`, 'notes.txt'), 'utf8')).toBe(
      'x',
    );
    expect((await readdir(dirs.root)).sort()).toEqual([`.tenant-${sha256('.hidden')}`, 'Team_Payments.eu']);
  });

  it('replaces an existing file atomically, keeping its mode and leaving no temporary file', async () => {
    await mkdir(dirs.home, { recursive: true });
    const file = path.join(dirs.home, 'a.txt');
    await writeFile(file, 'old content that is longer');
    await chmod(file, 0o640);
    await tool.execute(tool.schema.parse({ path: 'a.txt', content: 'new' }), toolContext());
    expect(await readFile(file, 'utf8')).toBe('new');
    expect((await stat(file)).mode & 0o777).toBe(0o640);
    expect(await readdir(dirs.home)).toEqual(['a.txt']);
  });

  it('refuses a link to a folder outside the workspace, writing nothing there', async () => {
    await mkdir(dirs.home, { recursive: true });
    await symlink(dirs.outside, path.join(dirs.home, 'planted'));
    const error = await tool
      .execute(tool.schema.parse({ path: 'planted/evil.txt', content: 'x' }), toolContext())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TerminalToolError);
    expect(error).toMatchObject({ code: 'path_escape' });
    expect((error as Error).message).not.toContain('planted');
    expect(await readdir(dirs.outside)).toEqual([]);
  });

  it('refuses a link as the file, leaving the link target unchanged', async () => {
    await mkdir(dirs.home, { recursive: true });
    const secret = path.join(dirs.outside, 'secret.txt');
    await writeFile(secret, 'keep me');
    await symlink(secret, path.join(dirs.home, 'a.txt'));
    await expect(
      tool.execute(tool.schema.parse({ path: 'a.txt', content: 'x' }), toolContext()),
    ).rejects.toMatchObject({
      code: 'path_escape',
    });
    expect(await readFile(secret, 'utf8')).toBe('keep me');
  });

  it('refuses a hard link as the file, leaving the other name’s content unchanged', async () => {
    await mkdir(dirs.home, { recursive: true });
    await mkdir(dirs.outside, { recursive: true });
    await writeFile(path.join(dirs.outside, 'secret.txt'), 'secret');
    await link(path.join(dirs.outside, 'secret.txt'), path.join(dirs.home, 'a.txt'));
    const args = tool.schema.parse({ path: 'a.txt', content: 'secret' });
    await expect(tool.execute(args, toolContext())).rejects.toMatchObject({ code: 'path_escape' });
    expect(await readFile(path.join(dirs.outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(await tool.reconcile?.(args, toolContext())).toEqual({ status: 'unknown' });
  });

  it('fails terminally when a folder occupies the path or a file occupies a folder', async () => {
    await mkdir(path.join(dirs.home, 'dir'), { recursive: true });
    await writeFile(path.join(dirs.home, 'file'), 'x');
    await expect(
      tool.execute(tool.schema.parse({ path: 'dir', content: 'x' }), toolContext()),
    ).rejects.toMatchObject({
      code: 'not_a_file',
    });
    await expect(
      tool.execute(tool.schema.parse({ path: 'file/x', content: 'x' }), toolContext()),
    ).rejects.toMatchObject({
      code: 'not_a_directory',
    });
  });

  it('is known not applied when the deadline has passed before the write', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await tool
      .execute(tool.schema.parse({ path: 'a.txt', content: 'x' }), toolContext({ signal: controller.signal }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotAppliedError);
    await expect(stat(path.join(dirs.home, 'a.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  describe('reconcile', () => {
    const args = () => tool.schema.parse({ path: 'r/file.txt', content: 'the content' });

    it('is applied with the same result as execute when the file holds the content', async () => {
      const executed = await tool.execute(args(), toolContext());
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'applied', result: executed });
    });

    it('is not applied when the file, its folder or the whole workspace is absent', async () => {
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'not_applied' });
      await mkdir(dirs.home, { recursive: true });
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'not_applied' });
      await mkdir(path.join(dirs.home, 'r'));
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'not_applied' });
    });

    it('is not applied when the file holds other content (same size or not)', async () => {
      await mkdir(path.join(dirs.home, 'r'), { recursive: true });
      await writeFile(path.join(dirs.home, 'r/file.txt'), 'THE CONTENT');
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'not_applied' });
      await writeFile(path.join(dirs.home, 'r/file.txt'), 'other');
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'not_applied' });
    });

    it('is unknown when a link now sits on the path (it will not read through it)', async () => {
      await mkdir(dirs.home, { recursive: true });
      await mkdir(path.join(dirs.outside, 'r'));
      await writeFile(path.join(dirs.outside, 'r/file.txt'), 'the content');
      await symlink(path.join(dirs.outside, 'r'), path.join(dirs.home, 'r'));
      expect(await tool.reconcile?.(args(), toolContext())).toEqual({ status: 'unknown' });
    });
  });
});
