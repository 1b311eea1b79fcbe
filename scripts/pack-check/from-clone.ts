import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type ShellBlock, shellBlocks } from '../docs/shell-blocks';

/**
 * The parts of pack-check that follow the docs word for word: the install commands of the README (the
 * same as docs/install.md's) run as written in a fresh clone and a project next to it, and the tools
 * page's local run run as written in that project. What they print is checked against what the docs
 * say they print.
 */

/** The ```sh blocks of a page that pack-check runs (`<!-- doc-test: pack-check -->`). */
export async function packCheckBlocks(root: string, file: string): Promise<ShellBlock[]> {
  const markdown = await readFile(path.join(root, file), 'utf8');
  return shellBlocks(file, markdown).filter((b) => b.kind === 'pack-check');
}

/** Environment for npm in scratch projects: the cache first (installs work offline), no audit, no fund. */
export const QUIET_NPM = {
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_loglevel: 'error',
};

/** One file of `npm publish --dry-run`'s listing: `npm notice 1.2kB dist/index.js`. */
const LISTED = /^npm notice\s+[\d.]+[kMG]?B\s+(\S.*)$/;

/**
 * What `npm publish --dry-run` says about a package: the files it would publish, and every warning or
 * error it printed other than "not logged in" (a dry run from a machine without npm credentials).
 */
export function publishReport(output: string): { files: string[]; complaints: string[] } {
  const lines = output.split('\n');
  return {
    files: lines.flatMap((l) => {
      const match = LISTED.exec(l.trim());
      return match ? [match[1] as string] : [];
    }),
    complaints: lines.filter(
      (l) => /^npm (warn|error|ERR!)/i.test(l) && !/requires you to be logged in/.test(l),
    ),
  };
}

/**
 * Every file a package.json names as an entry (`exports` targets, `bin`), relative to the package.
 *
 * @example
 * ```ts
 * entryFiles({ exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } } });
 * // ['dist/index.d.ts', 'dist/index.js']
 * ```
 */
export function entryFiles(manifest: { exports?: unknown; bin?: unknown }): string[] {
  const found: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string') found.push(path.posix.normalize(value));
    else if (value && typeof value === 'object') for (const v of Object.values(value)) walk(v);
  };
  walk(manifest.exports);
  walk(manifest.bin);
  return [...new Set(found)];
}

/** The curl call of a docs block or of the start banner: its operation ID and its body. */
export function curlCall(text: string): { key: string; body: unknown } | undefined {
  const key = /Idempotency-Key: ([^'"\s]+)/.exec(text)?.[1];
  const body = /-d '([^']+)'/.exec(text)?.[1];
  return key === undefined || body === undefined ? undefined : { key, body: JSON.parse(body) };
}

/**
 * Starts a docs block that starts local mode (`… npx tool-ledger start`) in its own process group, on
 * a free port, and resolves once the banner is printed whole. `env` is the block's whole environment
 * (the caller decides what of its own it passes on).
 */
export function startBlock(
  block: ShellBlock,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; api: string; banner: string }> {
  const child = spawn('bash', ['-e', '-c', block.script], {
    cwd,
    env: { ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const api = /^tool-ledger ready api=(\S+)/m.exec(out)?.[1];
      if (api !== undefined && out.includes('Ctrl-C stops.')) resolve({ child, api, banner: out });
    });
    child.once('exit', (code) =>
      reject(new Error(`${block.script} exited (${code}) before it was ready:\n${out}`)),
    );
  });
}
