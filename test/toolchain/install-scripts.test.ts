import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withoutRepositoryNpmConfig } from '../../scripts/pack-check/consumer-env';
import { useTempFolders } from '../support/temp-folders';

/**
 * The install-script policy (.npmrc and package.json `allowScripts`): only the packages named there run
 * an install script, and any other one fails the install rather than running with a warning.
 */

const ROOT = path.join(import.meta.dirname, '..', '..');
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const folder = useTempFolders('tool-ledger-install-scripts-');

/**
 * Runs npm as a fresh shell would: `npm test` hands its own settings to the tests as `npm_config_*`
 * variables, and the check below must see only the .npmrc of the folder it runs in.
 */
function npm(args: string[], cwd: string): { status: number | null; out: string } {
  const result = spawnSync('npm', args, { cwd, env: withoutRepositoryNpmConfig(), encoding: 'utf8' });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

describe('install scripts', () => {
  it('npm finds no installed package whose install script the policy does not cover', () => {
    const pending = npm(['approve-scripts', '--allow-scripts-pending'], ROOT);
    expect(pending.out).toContain('No packages with unreviewed install scripts');
    expect(pending.status).toBe(0);
  });

  it('the policy names only installed packages that have an install script', () => {
    const lock = json('package-lock.json') as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const withScripts = new Set(
      Object.entries(lock.packages)
        .filter(([, entry]) => entry.hasInstallScript)
        .map(([key]) => key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length)),
    );
    const allowed = Object.keys(json('package.json').allowScripts);
    expect(allowed.length).toBeGreaterThan(0);
    expect(allowed.filter((name) => !withScripts.has(name))).toEqual([]);
  });

  it("a dependency with an install script the policy does not name fails the install under the repository's .npmrc, and its script never runs", async () => {
    const dir = await folder();
    const pkg = path.join(dir, 'scripted');
    mkdirSync(pkg);
    writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({
        name: 'scripted',
        version: '1.0.0',
        scripts: {
          postinstall: "node -e \"require('fs').writeFileSync(process.env.INIT_CWD + '/ran', '')\"",
        },
      }),
    );
    expect(npm(['pack', '--pack-destination', dir], pkg).status).toBe(0);
    const project = path.join(dir, 'project');
    mkdirSync(project);
    copyFileSync(path.join(ROOT, '.npmrc'), path.join(project, '.npmrc'));
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({
        name: 'project',
        private: true,
        dependencies: { scripted: 'file:../scripted-1.0.0.tgz' },
      }),
    );
    const installed = npm(['install', '--no-audit', '--no-fund', '--offline'], project);
    expect(installed.out).toContain('ESTRICTALLOWSCRIPTS');
    expect(installed.status).not.toBe(0);
    expect(existsSync(path.join(project, 'ran'))).toBe(false);
  });
});
