import { createHash } from 'node:crypto';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TerminalToolError } from '../../functions/domain/tool';
import {
  resolveWorkspaceTarget,
  tenantFolder,
  tenantPath,
  workspacePathSchema,
} from '../../functions/tools/workspace-path';
import { tempDirs } from './tool-context';

describe('workspace path schema', () => {
  it.each([
    ['a//b/./c.txt', 'a/b/c.txt'],
    ['./notes.md', 'notes.md'],
    ['a/./././b', 'a/b'],
    ['dir with spaces/ünïcødé.txt', 'dir with spaces/ünïcødé.txt'],
    ['.hidden', '.hidden'],
    ['...', '...'],
  ])('normalizes %j to %j so the digest does not depend on spelling', (input, output) => {
    expect(workspacePathSchema.parse(input)).toBe(output);
  });

  it.each([
    ['empty', ''],
    ['absolute', '/etc/passwd'],
    ['parent escape', '../outside.txt'],
    ['deep parent escape', 'a/b/../../../x'],
    ['inner .. even when it stays inside', 'a/../b.txt'],
    ['trailing ..', 'a/..'],
    ['NUL byte', 'a\u0000b.txt'],
    ['control character', 'a\nb.txt'],
    ['backslash separator', 'a\\..\\b.txt'],
    ['a folder (trailing slash)', 'a/'],
    ['a folder (trailing dot)', 'a/.'],
    ['the root itself', '.'],
    ['the reserved folder', '.tool-ledger/markers/x/1.json'],
    ['the reserved folder in another case', './.Tool-Ledger/x'],
    ['a segment over 255 bytes', `${'é'.repeat(128)}.txt`],
    ['a path over 1024 characters', `${'a/'.repeat(600)}x`],
  ])('refuses %s before anything runs', (_label, input) => {
    expect(workspacePathSchema.safeParse(input).success).toBe(false);
  });

  it('never repeats the refused path in its messages', () => {
    const result = workspacePathSchema.safeParse('../SECRET-VALUE.txt');
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues.map((issue) => issue.message))).not.toContain('SECRET');
  });
});

describe('resolveWorkspaceTarget', () => {
  let dirs: Awaited<ReturnType<typeof tempDirs>>;
  beforeEach(async () => {
    dirs = await tempDirs();
    await mkdir(dirs.root, { recursive: true });
    await mkdir(dirs.outside, { recursive: true });
  });
  afterEach(() => dirs.cleanup());

  it('creates missing folders one by one when asked', async () => {
    const target = await resolveWorkspaceTarget(dirs.root, 'a/b/c.txt', { createParents: true });
    expect(target?.dir).toBe(path.join(dirs.root, 'a/b'));
    expect(target?.existing).toBeUndefined();
  });

  it('reports a missing folder as absent without creating it', async () => {
    expect(await resolveWorkspaceTarget(dirs.root, 'a/b/c.txt', { createParents: false })).toBeUndefined();
    expect(
      await resolveWorkspaceTarget(path.join(dirs.base, 'nope'), 'c.txt', { createParents: false }),
    ).toBeUndefined();
  });

  it('refuses a link to a folder anywhere on the path', async () => {
    await symlink(dirs.outside, path.join(dirs.root, 'escape'));
    await expect(
      resolveWorkspaceTarget(dirs.root, 'escape/x.txt', { createParents: true }),
    ).rejects.toMatchObject({
      code: 'path_escape',
    });
  });

  it('refuses a link that stays inside the workspace too', async () => {
    await mkdir(path.join(dirs.root, 'real'));
    await symlink('real', path.join(dirs.root, 'alias'));
    await expect(
      resolveWorkspaceTarget(dirs.root, 'alias/x.txt', { createParents: false }),
    ).rejects.toBeInstanceOf(TerminalToolError);
  });

  it('refuses a link as the file itself', async () => {
    await writeFile(path.join(dirs.outside, 'secret'), 'x');
    await symlink(path.join(dirs.outside, 'secret'), path.join(dirs.root, 'file.txt'));
    await expect(
      resolveWorkspaceTarget(dirs.root, 'file.txt', { createParents: false }),
    ).rejects.toMatchObject({
      code: 'path_escape',
    });
  });

  it('accepts a workspace root that is itself a link (the deployment chose it)', async () => {
    const alias = path.join(dirs.base, 'root-alias');
    await symlink(dirs.root, alias);
    const target = await resolveWorkspaceTarget(alias, 'x.txt', { createParents: true });
    expect(target?.file).toBe(path.join(dirs.root, 'x.txt'));
  });

  it('refuses a file where a folder should be', async () => {
    await writeFile(path.join(dirs.root, 'a'), 'x');
    await expect(resolveWorkspaceTarget(dirs.root, 'a/b.txt', { createParents: true })).rejects.toMatchObject(
      {
        code: 'not_a_directory',
      },
    );
  });
});

describe('tenant folders', () => {
  const hashed = (tenant: string) => `.tenant-${createHash('sha256').update(tenant, 'utf8').digest('hex')}`;

  it.each([
    ['local', 'local'],
    ['tenant-a', 'tenant-a'],
    ['Acme', 'Acme'],
    ['acme_prod', 'acme_prod'],
    ['team.payments', 'team.payments'],
    ['_2e', '_2e'],
    ['x'.repeat(128), 'x'.repeat(128)],
  ])('%j is its own folder, verbatim', (tenant, folder) => {
    expect(tenantFolder(tenant)).toBe(folder);
  });

  it.each([
    ['..', 'the parent folder'],
    ['.', 'the root itself'],
    ['.hidden', 'a hidden folder'],
    ['.tool-ledger', 'the tools’ reserved name'],
    ['acme.', 'a trailing dot (Windows drops it: acme)'],
    ['acme:prod', 'a colon (an alternate data stream of acme on Windows)'],
    ['con', 'a Windows device name'],
    ['LPT1.log', 'a Windows device name with an extension'],
    ['a/../b', 'outside the tenant grammar'],
    ['é', 'outside the tenant grammar'],
  ])('%j (%s) gets a .tenant-<sha256> folder', (tenant) => {
    expect(tenantFolder(tenant)).toBe(hashed(tenant));
  });

  test.prop([fc.string({ minLength: 1, maxLength: 300 }), fc.string({ minLength: 1, maxLength: 300 })])(
    'is one safe folder name, and different tenants never share one',
    (a, b) => {
      for (const t of [a, b]) {
        const folder = tenantFolder(t);
        expect(folder === t || folder === hashed(t)).toBe(true);
        expect(folder).not.toMatch(/[/\\:]/);
        expect(folder.includes('\u0000')).toBe(false);
        expect(['.', '..']).not.toContain(folder);
        // A verbatim folder never starts with a dot, so it is never a hashed one's name.
        if (folder === t) expect(folder).not.toMatch(/^\./);
      }
      if (a !== b) expect(tenantFolder(a)).not.toBe(tenantFolder(b));
    },
  );

  it('an empty tenant is refused, and a tenant path is inside the tenant folder', () => {
    expect(() => tenantFolder('')).toThrow(TerminalToolError);
    expect(tenantPath('Acme', 'a/b.txt')).toBe('Acme/a/b.txt');
  });

  it('a hard link as the file is path_escape', async () => {
    const dirs = await tempDirs();
    try {
      await mkdir(dirs.root, { recursive: true });
      await mkdir(dirs.outside, { recursive: true });
      await writeFile(path.join(dirs.outside, 'f'), 'x');
      await link(path.join(dirs.outside, 'f'), path.join(dirs.root, 'f'));
      await expect(resolveWorkspaceTarget(dirs.root, 'f', { createParents: false })).rejects.toMatchObject({
        code: 'path_escape',
      });
    } finally {
      await dirs.cleanup();
    }
  });
});
