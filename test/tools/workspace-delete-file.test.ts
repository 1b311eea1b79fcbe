import { link, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotAppliedError } from '../../functions/domain/tool';
import { workspaceDeleteFile } from '../../functions/tools/workspace-delete-file';
import { tempDirs, toolContext } from './tool-context';

describe('workspace.delete_file', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  let tool: ReturnType<typeof workspaceDeleteFile>;
  beforeEach(async () => {
    dirs = await tempDirs();
    await mkdir(dirs.home, { recursive: true });
    await mkdir(dirs.outside, { recursive: true });
    tool = workspaceDeleteFile({ workspaceRoot: dirs.root });
  });
  afterEach(() => dirs.cleanup());

  const parse = (p: string) => tool.schema.parse({ path: p });

  it('requires approval and refuses bad paths and unknown keys in the schema', () => {
    expect(tool).toMatchObject({ name: 'workspace.delete_file', effect: 'write', requiresApproval: true });
    expect(tool.schema.safeParse({ path: '../x' }).success).toBe(false);
    expect(tool.schema.safeParse({ path: 'x', recursive: true }).success).toBe(false);
  });

  it('deletes the file', async () => {
    await writeFile(path.join(dirs.home, 'a.txt'), 'x');
    expect(await tool.execute(parse('./a.txt'), toolContext())).toEqual({ path: 'a.txt', deleted: true });
    expect(await readdir(dirs.home)).toEqual([]);
  });

  it('succeeds with deleted=false when the file, a folder on the way, or the folder itself is missing', async () => {
    expect(await tool.execute(parse('a.txt'), toolContext())).toEqual({ path: 'a.txt', deleted: false });
    expect(await tool.execute(parse('no/such/a.txt'), toolContext())).toEqual({
      path: 'no/such/a.txt',
      deleted: false,
    });
    await writeFile(path.join(dirs.home, 'file'), 'x');
    expect(await tool.execute(parse('file/a.txt'), toolContext())).toEqual({
      path: 'file/a.txt',
      deleted: false,
    });
  });

  it('refuses a link as the file and through a folder, deleting nothing', async () => {
    const secret = path.join(dirs.outside, 'secret.txt');
    await writeFile(secret, 'keep me');
    await symlink(secret, path.join(dirs.home, 'link.txt'));
    await symlink(dirs.outside, path.join(dirs.home, 'out'));
    await expect(tool.execute(parse('link.txt'), toolContext())).rejects.toMatchObject({
      code: 'path_escape',
    });
    await expect(tool.execute(parse('out/secret.txt'), toolContext())).rejects.toMatchObject({
      code: 'path_escape',
    });
    expect(await readFile(secret, 'utf8')).toBe('keep me');
    expect((await readdir(dirs.home)).sort()).toEqual(['link.txt', 'out']);
  });

  it('refuses a hard link as the file, and reconcile does not judge through one', async () => {
    await writeFile(path.join(dirs.outside, 'kept.txt'), 'x');
    await link(path.join(dirs.outside, 'kept.txt'), path.join(dirs.home, 'hard.txt'));
    const args = tool.schema.parse({ path: 'hard.txt' });
    await expect(tool.execute(args, toolContext())).rejects.toMatchObject({ code: 'path_escape' });
    expect(await readdir(dirs.home)).toEqual(['hard.txt']);
    expect(await tool.reconcile?.(args, toolContext())).toEqual({ status: 'unknown' });
  });

  it('deletes only the calling tenant’s file', async () => {
    await writeFile(path.join(dirs.home, 'a.txt'), 'x');
    const args = tool.schema.parse({ path: 'a.txt' });
    expect(await tool.execute(args, toolContext({ tenant: 'other' }))).toEqual({
      path: 'a.txt',
      deleted: false,
    });
    expect(await readdir(dirs.home)).toEqual(['a.txt']);
  });

  it('does not delete folders', async () => {
    await mkdir(path.join(dirs.home, 'dir'));
    await expect(tool.execute(parse('dir'), toolContext())).rejects.toMatchObject({ code: 'not_a_file' });
    expect((await stat(path.join(dirs.home, 'dir'))).isDirectory()).toBe(true);
  });

  it('is known not applied when the deadline has passed before the delete', async () => {
    await writeFile(path.join(dirs.home, 'a.txt'), 'x');
    const controller = new AbortController();
    controller.abort();
    await expect(
      tool.execute(parse('a.txt'), toolContext({ signal: controller.signal })),
    ).rejects.toBeInstanceOf(NotAppliedError);
    expect(await readdir(dirs.home)).toEqual(['a.txt']);
  });

  describe('reconcile', () => {
    it('is applied when the file is absent, without claiming who removed it', async () => {
      expect(await tool.reconcile?.(parse('gone.txt'), toolContext())).toEqual({
        status: 'applied',
        result: { path: 'gone.txt', deleted: null },
      });
    });

    it('is applied after the delete ran', async () => {
      await writeFile(path.join(dirs.home, 'a.txt'), 'x');
      await tool.execute(parse('a.txt'), toolContext());
      expect(await tool.reconcile?.(parse('a.txt'), toolContext())).toMatchObject({ status: 'applied' });
    });

    it('is not applied while the file is still there', async () => {
      await writeFile(path.join(dirs.home, 'a.txt'), 'x');
      expect(await tool.reconcile?.(parse('a.txt'), toolContext())).toEqual({ status: 'not_applied' });
    });

    it('is unknown when a link sits on the path', async () => {
      await symlink(dirs.outside, path.join(dirs.home, 'out'));
      expect(await tool.reconcile?.(parse('out/a.txt'), toolContext())).toEqual({ status: 'unknown' });
    });
  });
});
