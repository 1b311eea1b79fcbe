import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main, PLAN } from '../../scripts/smoke/main';
import { useTempFolders } from '../support/temp-folders';

/**
 * `npm run smoke`: what runs against a real account cannot run here, so this checks what must hold
 * without one: the dry run prints the whole plan and exits 0 without credentials or network, and a
 * run without credentials for the profile refuses before any call, saying what to do.
 */

const tempFolder = useTempFolders('tool-ledger-smoke-');

function run(argv: string[]) {
  const lines: string[] = [];
  return main(argv, (line) => lines.push(line)).then((code) => ({ code, out: lines.join('\n') }));
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('npm run smoke', () => {
  it('dry run: prints every step with what it promises, and exits 0 without credentials', async () => {
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', '/nonexistent/credentials');
    const { code, out } = await run(['--dry-run', '--profile', 'prod-admin', '--stack', 'Ledger']);
    expect(code).toBe(0);
    expect(out).toContain('smoke plan for stack Ledger with profile prod-admin (dry run: nothing is called)');
    for (const [i, step] of PLAN.entries()) expect(out).toContain(`${i + 1}. ${step.name}: ${step.promise}`);
    expect(PLAN.map((s) => s.name)).toEqual(
      expect.arrayContaining(['API over SigV4', 'queue', 'forced uncertain outcome', 'alarm notification']),
    );
  });

  it('refuses clearly, before any call, when the profile has no credentials', async () => {
    const home = await tempFolder();
    vi.stubEnv('HOME', home);
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', path.join(home, 'credentials'));
    vi.stubEnv('AWS_CONFIG_FILE', path.join(home, 'config'));
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
    const { code, out } = await run(['--profile', 'nosuch', '--tenant', 'acme', '--region', 'eu-west-1']);
    expect(code).toBe(2);
    expect(out).toMatch(/^no AWS credentials for profile "nosuch"/);
    expect(out).toContain('aws sso login --profile nosuch');
    expect(out).toContain('--dry-run');
  });

  it('refuses a command line it cannot run, with the usage', async () => {
    for (const argv of [['--tenant', 'acme', '--region', 'eu-west-1'], ['--profile'], ['--bogus']]) {
      const { code, out } = await run(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(out).toContain('usage: npm run smoke -- --profile NAME --tenant TENANT');
    }
  });
});
