import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Local mode's bearer tokens when `TOOL_LEDGER_TOKENS` is not set: never a fixed value (a web page, or
 * anyone who read the README, could guess it), but two random tokens made at the data folder's first
 * start, an agent+operator token and an approver token of tenant `local`, kept in the data folder and
 * printed in the start banner. The file is `<data folder>/tokens`, readable only by its user (0600; a
 * data folder local mode creates is 0700), holding one line in `TOOL_LEDGER_TOKENS`'s own format, so
 * that `TOOL_LEDGER_TOKENS=$(cat .data/tokens)` names the same tokens. The CLI reads the same file
 * (`npx tool-ledger token`, and its default credentials against local mode).
 */

/** The tokens file's name in the data folder. */
export const TOKENS_FILE = 'tokens';

/** The tenant of the generated tokens. */
export const LOCAL_TENANT = 'local';

/** The tokens of a data folder, and whether this start made them. */
export interface LocalTokens {
  /** `TOOL_LEDGER_TOKENS`'s format: `<agent>=local:agent+operator,<approver>=local:approver`. */
  spec: string;
  /** Absolute path of the file. */
  file: string;
  created: boolean;
}

/** A token: `tl_` and 43 base64url characters of 32 random bytes; no `=`, `,` or `:` (the spec's separators). */
function newToken(): string {
  return `tl_${randomBytes(32).toString('base64url')}`;
}

/**
 * The data folder's tokens: read from its file, or made and written there at its first start (created
 * with `O_EXCL`, so two starts racing on a fresh folder end with the same tokens). The folder is
 * created 0700 if it does not exist; an existing folder's mode is left as it is.
 *
 * @example
 * ```ts
 * const { spec, file } = await localTokens('/home/me/project/.data');
 * // spec: 'tl_…=local:agent+operator,tl_…=local:approver'
 * ```
 */
export async function localTokens(dataDir: string): Promise<LocalTokens> {
  const file = join(dataDir, TOKENS_FILE);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const spec = `${newToken()}=${LOCAL_TENANT}:agent+operator,${newToken()}=${LOCAL_TENANT}:approver`;
  try {
    const handle = await open(file, 'wx', 0o600);
    try {
      await handle.writeFile(`${spec}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { spec, file, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return { spec: (await readFile(file, 'utf8')).trim(), file, created: false };
}

/**
 * The first token of a tokens spec that carries `role`, if any (for the CLI: the spec is local mode's,
 * which checked it at start).
 *
 * @example
 * ```ts
 * tokenWithRole('a=local:agent+operator,b=local:approver', 'approver'); // 'b'
 * ```
 */
export function tokenWithRole(spec: string, role: string): string | undefined {
  for (const entry of spec.split(',')) {
    const trimmed = entry.trim();
    const eq = trimmed.indexOf('=');
    const colon = trimmed.lastIndexOf(':');
    if (eq <= 0 || colon <= eq) continue;
    if (
      trimmed
        .slice(colon + 1)
        .split('+')
        .includes(role)
    )
      return trimmed.slice(0, eq);
  }
  return undefined;
}
