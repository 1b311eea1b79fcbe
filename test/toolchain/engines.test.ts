import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { NODE_22_VERSION } from '../../scripts/pack-check/consumer-env';

/**
 * `engines`, checked against the Node that actually runs the code. npm checks them against the Node
 * that runs npm itself, which on a stock machine is not the repository's Node 24, so its warnings are
 * silenced in .npmrc and the checks live here, where they fail instead of warning.
 */

const ROOT = path.join(import.meta.dirname, '..', '..');
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

interface LockEntry {
  version?: string;
  dev?: boolean;
  link?: boolean;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const lock: { packages: Record<string, LockEntry> } = json('package-lock.json');
/** npm's own reading of a range (`engines` allows prereleases). */
const RANGE = { includePrerelease: true };

/** The lockfile key a package named `name` resolves to from the package at `from`, as Node resolves it. */
function resolve(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const key = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
    if (lock.packages[key]) return key;
    if (dir === '') return undefined;
    const up = dir.lastIndexOf('/node_modules/');
    dir = up < 0 ? '' : dir.slice(0, up);
  }
}

/**
 * The agent frameworks the client's framework entries adapt (optional peers). A user who installs one
 * runs the Node that framework asks for (Mastra: 22.13 and later); the client does not narrow its own
 * range for them, and docs/frameworks.md says so. The client's other peers (the AWS SDK for SigV4 and
 * SQS, the MCP SDK) are checked with it.
 */
const FRAMEWORKS = new Set([
  'ai',
  '@mastra/core',
  '@openai/agents',
  '@langchain/core',
  '@aws/durable-execution-sdk-js',
]);

/** Every installed package a published package loads at run time: its dependencies and theirs. */
function runtimeClosure(workspace: string, withPeers: boolean): Map<string, LockEntry> {
  const found = new Map<string, LockEntry>();
  const root = lock.packages[workspace] as LockEntry;
  const queue = [
    ...Object.keys(root.dependencies ?? {}),
    ...Object.keys(root.optionalDependencies ?? {}),
    ...(withPeers ? Object.keys(root.peerDependencies ?? {}).filter((name) => !FRAMEWORKS.has(name)) : []),
  ].map((name) => resolve(workspace, name));
  while (queue.length > 0) {
    const key = queue.pop();
    if (key === undefined || found.has(key)) continue;
    const entry = lock.packages[key] as LockEntry;
    if (!existsSync(path.join(ROOT, key))) continue; // an optional package for another platform
    found.set(key, entry);
    for (const name of [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
    ]) {
      queue.push(resolve(key, name));
    }
  }
  return found;
}

describe('engines', () => {
  it('every installed package accepts the Node the tests run on', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([key, entry]) => key !== '' && entry.engines?.node !== undefined)
      .filter(([key]) => existsSync(path.join(ROOT, key)))
      .filter(([, entry]) => !semver.satisfies(process.version, entry.engines?.node as string, RANGE))
      .map(([key, entry]) => `${key}@${entry.version} wants ${entry.engines?.node}`);
    expect(refusing).toEqual([]);
  });

  it.each([
    ['tool-ledger', '', false],
    // The client depends on the OpenTelemetry API only; its optional peers are what its sub-entries load.
    ['@tool-ledger/client', 'client', true],
  ] as const)(
    '%s declares Node 22 and 24, and nothing its run-time dependencies refuse',
    (_name, workspace, withPeers) => {
      const declared = json(path.join(workspace, 'package.json')).engines.node as string;
      expect(semver.satisfies(NODE_22_VERSION, declared, RANGE)).toBe(true);
      expect(semver.satisfies(process.version, declared, RANGE)).toBe(true);
      const closure = runtimeClosure(workspace, withPeers);
      expect(closure.size).toBeGreaterThan(withPeers ? 3 : 50);
      const narrower = [...closure]
        .filter(([, entry]) => entry.engines?.node !== undefined)
        .filter(([, entry]) => !semver.subset(declared, entry.engines?.node as string, RANGE))
        .map(([key, entry]) => `${key}@${entry.version} wants ${entry.engines?.node}`);
      expect(narrower).toEqual([]);
    },
  );
});
