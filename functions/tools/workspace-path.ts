import { createHash, randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, realpath, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod/mini';
import { TENANT_PATTERN } from '../contract/table';
import { NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../domain/tool';

/**
 * Safe file access under the workspace root, shared by the workspace tools: the path schema (what a
 * caller may name), the resolution that refuses links (what execute may touch), and the atomic write.
 *
 * Each tenant has a root of its own, `<workspace>/<tenant>/` ({@link tenantFolder}): every
 * path a caller names, and every marker a tool keeps, lives below it, so one tenant can neither read,
 * overwrite, delete nor reconcile against another's files.
 *
 * Threat model: the agent reaches the file system only through these tools. The checks refuse any
 * symbolic link below the workspace root, the tenant folder included, and any file with a second
 * name (a hard link, link count above 1), whoever planted it (a checkout, an earlier process, a
 * person), so a call can never read or write outside its root through one. A hostile local user racing the checks with link
 * swaps is out of scope: Node has no `openat`, so the checks narrow that window (O_NOFOLLOW, a
 * `realpath` check of the parent just before the commit) but cannot close it.
 */

/** Hidden folder of the tools' own bookkeeping (markers); callers may not name anything inside it. */
export const RESERVED_DIR = '.tool-ledger';
/** Longest path a caller may give, in characters. */
export const MAX_PATH_CHARS = 1024;
/** Longest path segment, in UTF-8 bytes (the common file-name limit). */
const MAX_SEGMENT_BYTES = 255;

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** Why a caller's path is refused, or `undefined`. Reasons never repeat the path. */
function pathProblem(raw: string): string | undefined {
  if (raw.includes('\u0000')) return 'must not contain NUL bytes';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\u0001-\u001f\u007f]/.test(raw)) return 'must not contain control characters';
  if (raw.includes('\\')) return 'must use / as the separator';
  if (raw.startsWith('/')) return 'must be relative to the workspace root';
  const raws = raw.split('/');
  if (raws.includes('..')) return 'must not contain .. segments';
  const last = raws[raws.length - 1];
  if (last === '' || last === '.') return 'must name a file, not a folder';
  const segments = raws.filter((segment) => segment !== '' && segment !== '.');
  if (segments.length === 0) return 'must name a file';
  if (segments[0]?.toLowerCase() === RESERVED_DIR)
    return `must not be inside ${RESERVED_DIR}/, which is reserved`;
  if (segments.some((segment) => Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES)) {
    return `must not have a segment longer than ${MAX_SEGMENT_BYTES} bytes`;
  }
  return undefined;
}

/**
 * A file path relative to the workspace root, normalized in the output (`a//b/./c.txt` →
 * `a/b/c.txt`) so that the arguments digest does not depend on spelling. Refused: absolute paths,
 * `..` segments (even ones that would stay inside), NUL and control characters, backslashes, paths
 * naming a folder (`a/`, `a/.`), and anything inside the reserved `.tool-ledger/` folder.
 *
 * @example
 * ```ts
 * workspacePathSchema.parse('notes//today/./log.txt'); // 'notes/today/log.txt'
 * workspacePathSchema.safeParse('../etc/passwd').success; // false
 * ```
 */
export const workspacePathSchema = z.pipe(
  z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(MAX_PATH_CHARS),
      z.describe('File path relative to the workspace root, with / separators; no .., no absolute paths.'),
    ),
  z.transform((raw: string, ctx) => {
    const problem = pathProblem(raw);
    if (problem !== undefined) {
      ctx.issues.push({ code: 'custom', message: `path ${problem}`, input: raw });
      return z.NEVER;
    }
    return raw
      .split('/')
      .filter((segment) => segment !== '' && segment !== '.')
      .join('/');
  }),
);

/**
 * Windows device names (with or without an extension): such a folder name reaches a device, not a
 * folder. Compared without regard to case, as Windows does.
 */
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;

/**
 * The folder name of a tenant's workspace root, `<workspace>/<tenant>/`: the tenant's own name,
 * verbatim, whenever that name is one plain folder on every file system the ledger runs on. A tenant
 * that could escape or hide as a folder name gets `.tenant-` + the hex SHA-256 of its name instead:
 * a name that starts with `.` (`.`, `..`, a hidden folder), ends with `.` (Windows drops it), holds
 * `:` (an alternate data stream on Windows), is a Windows device name, or is outside the tenant
 * grammar (`[A-Za-z0-9._:-]{1,128}`, which keeps separators out). The mapping is injective: verbatim
 * names never start with `.`, hashed ones always do. Case is kept, so two tenants that differ only by
 * case would share a folder on a case-insensitive file system: local mode refuses such a pair at start.
 *
 * @example
 * ```ts
 * tenantFolder('Acme');       // 'Acme'
 * tenantFolder('..');         // '.tenant-' + sha256('..') in hex
 * ```
 */
export function tenantFolder(tenant: string): string {
  if (tenant === '') throw new TerminalToolError('invalid_context', 'the call has no tenant');
  const plain =
    TENANT_PATTERN.test(tenant) &&
    !tenant.startsWith('.') &&
    !tenant.endsWith('.') &&
    !tenant.includes(':') &&
    !DEVICE_NAME.test(tenant);
  if (plain) return tenant;
  return `.tenant-${createHash('sha256').update(tenant, 'utf8').digest('hex')}`;
}

/**
 * A caller's normalized path as a path below the workspace root: inside the tenant's own folder.
 * Every workspace tool resolves this, never the caller's path alone.
 */
export function tenantPath(tenant: string, relativePath: string): string {
  return `${tenantFolder(tenant)}/${relativePath}`;
}

/** Where a normalized workspace path lives on disk, after checking every component. */
export interface WorkspaceTarget {
  /** The real path of the workspace root. */
  root: string;
  /** The real path of the file's folder (checked: no link on the way). */
  dir: string;
  /** The file's base name. */
  name: string;
  /** `dir` + `name`. */
  file: string;
  /** `lstat` of the file, or `undefined` when it does not exist. Never a link, never a second name. */
  existing: Stats | undefined;
}

function errnoCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** `lstat`, with `undefined` for a missing entry. */
async function lstatOrUndefined(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function linkRefused(): TerminalToolError {
  return new TerminalToolError(
    'path_escape',
    'the path goes through a symbolic link, which the workspace refuses',
  );
}

/** A file with more than one name may be reachable from outside the root: refused like a link. */
export function hardLinkRefused(): TerminalToolError {
  return new TerminalToolError(
    'path_escape',
    'the path names a file with more than one name (a hard link), which the workspace refuses',
  );
}

/**
 * Resolves a normalized path below the workspace root (for a caller's path: {@link tenantPath}),
 * refusing a symbolic link at any component (the root itself may be one: that is the deployment's
 * choice) and a file whose link count is above 1 (a hard link). With `createParents`, missing folders (and the root)
 * are created one by one, each checked; without it, a missing root or folder yields `undefined`.
 *
 * Throws {@link TerminalToolError} `path_escape` (a symbolic or hard link), `not_a_directory` (a component is a
 * file) or `not_a_file` (the target is a folder or a special file); other errors are raw fs errors.
 */
export async function resolveWorkspaceTarget(
  workspaceRoot: string,
  relativePath: string,
  options: { createParents: boolean },
): Promise<WorkspaceTarget | undefined> {
  if (options.createParents) await mkdir(workspaceRoot, { recursive: true });
  let root: string;
  try {
    root = await realpath(workspaceRoot);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const segments = relativePath.split('/');
  const name = segments.pop() ?? '';
  let dir = root;
  for (const segment of segments) {
    const next = path.join(dir, segment);
    let stats = await lstatOrUndefined(next);
    if (stats === undefined) {
      if (!options.createParents) return undefined;
      try {
        await mkdir(next);
      } catch (error) {
        if (errnoCode(error) !== 'EEXIST') throw error;
      }
      stats = await lstat(next);
    }
    if (stats.isSymbolicLink()) throw linkRefused();
    if (!stats.isDirectory())
      throw new TerminalToolError('not_a_directory', 'a parent of the path is not a folder');
    dir = next;
  }
  await assertRealDir(dir);
  const file = path.join(dir, name);
  const existing = await lstatOrUndefined(file);
  if (existing?.isSymbolicLink()) throw linkRefused();
  if (existing !== undefined && !existing.isFile()) {
    throw new TerminalToolError(
      'not_a_file',
      'the path names a folder or a special file, not a regular file',
    );
  }
  if (existing !== undefined && existing.nlink > 1) throw hardLinkRefused();
  return { root, dir, name, file, existing };
}

/**
 * Re-checks, just before a commit, that the folder is still where the walk found it (no component
 * was swapped for a link since). Throws `path_escape` otherwise.
 */
export async function assertRealDir(dir: string): Promise<void> {
  if ((await realpath(dir)) !== dir) throw linkRefused();
}

/** fs error codes that a retry will not change: the call fails for good. */
const PERMANENT_FS_CODES = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENAMETOOLONG',
  'ENOTDIR',
  'EISDIR',
  'ELOOP',
  'EEXIST',
]);

/**
 * Maps a failure that happened before the effect's commit point (nothing changed in the workspace)
 * to a tool error: tool errors pass through, permanent fs conditions become terminal, anything else
 * (disk full, too many open files, I/O) is known not applied. Messages carry the errno code only:
 * Node's own messages contain the path.
 */
export function failureBeforeCommit(error: unknown): Error {
  if (
    error instanceof TerminalToolError ||
    error instanceof NotAppliedError ||
    error instanceof UncertainOutcomeError
  ) {
    return error;
  }
  const code = errnoCode(error);
  if (code === 'ELOOP') return linkRefused();
  if (code !== undefined && PERMANENT_FS_CODES.has(code)) {
    return new TerminalToolError(
      `fs_${code.toLowerCase()}`,
      `the file system refused the operation (${code})`,
    );
  }
  const label = code === undefined ? 'error' : code.toLowerCase();
  return new NotAppliedError(
    `fs_${label}`,
    `the file system failed before anything changed (${code ?? 'error'})`,
  );
}

/** Throws a not-applied error when the attempt's deadline has passed before the commit point. */
export function throwIfAbortedBeforeCommit(signal: AbortSignal): void {
  if (signal.aborted) throw new NotAppliedError('aborted', 'the attempt was aborted before anything changed');
}

/**
 * Opens an existing or new file for writing without following a link at the last component, and
 * without blocking on a FIFO (O_NONBLOCK makes that fail with ENXIO instead of waiting for a reader).
 */
export async function openNoFollow(file: string, flags: number, mode = 0o666): Promise<FileHandle> {
  return open(file, flags | O_NOFOLLOW | O_NONBLOCK, mode);
}

/** Opens a regular file with one name for reading without following a link; `undefined` when absent. */
export async function openForRead(file: string): Promise<FileHandle | undefined> {
  try {
    const handle = await open(file, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    const stats = await handle.stat();
    if (!stats.isFile()) {
      await handle.close();
      throw new TerminalToolError(
        'not_a_file',
        'the path names a folder or a special file, not a regular file',
      );
    }
    if (stats.nlink > 1) {
      await handle.close();
      throw hardLinkRefused();
    }
    return handle;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    if (errnoCode(error) === 'ELOOP') throw linkRefused();
    throw error;
  }
}

/** fsyncs a folder so that a rename or unlink in it survives a crash; best effort where unsupported. */
export async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, constants.O_RDONLY);
    await handle.sync();
  } catch {
    // Some platforms cannot fsync a folder; the rename itself is still atomic.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Writes `data` to `dir/name` atomically: a new temporary file in the same folder (O_EXCL, no
 * link-following), fsynced, then renamed over the target, then the folder fsynced. Readers see the
 * old content or the new one, never a mix; a crash leaves at most a stray `.tl-*.tmp` file.
 * `beforeCommit` runs just before the rename and may throw to cancel (the temp file is removed).
 * Errors before the rename leave the target untouched.
 */
export async function writeFileAtomic(
  dir: string,
  name: string,
  data: Uint8Array,
  options: { mode?: number; beforeCommit?: () => Promise<void> } = {},
): Promise<void> {
  const temp = path.join(dir, `.tl-${randomBytes(8).toString('hex')}.tmp`);
  const handle = await openNoFollow(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  try {
    try {
      await handle.writeFile(data);
      // A replaced file keeps its mode; a new one gets the process umask, like any file a program creates.
      if (options.mode !== undefined) await handle.chmod(options.mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await options.beforeCommit?.();
    await rename(temp, path.join(dir, name));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDir(dir);
}
