import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { CHECKS } from '../../scripts/verify/checks';
import { assertSpinInstalled, cleanVerifiers, runCheck } from '../../scripts/verify/spin';

/*
 * Runs SPIN itself, so it belongs to `npm run verify` (vitest.verify.config.mts), which CI runs after
 * installing SPIN; `npm test` keeps to what a fresh machine has.
 */

const check = (name: string) => {
  const found = CHECKS.find((c) => c.name === name);
  if (!found) throw new Error(`no check ${name}`);
  return found;
};

describe('SPIN on the model of the protocol', () => {
  afterAll(cleanVerifiers);

  it('SPIN is installed (CI installs it: apt-get install -y spin)', async () => {
    await expect(assertSpinInstalled()).resolves.toBeUndefined();
    expect(execFileSync('spin', ['-V']).toString()).toMatch(/Spin Version 6/);
  });

  it('proves a property exhaustively: every approved effect had an approval of its digest', async () => {
    const result = await runCheck(check('approved_digest'));
    expect(result.errors).toBe(0);
    expect(result.states).toBeGreaterThan(1000);
  }, 300_000);

  it('refutes the old downstream key rule with a counterexample: a reused key is swallowed by the target', async () => {
    const result = await runCheck(check('broken/old-downstream-key-dedupe'));
    expect(result.errors).toBeGreaterThan(0);
    const trail = result.trail?.join('\n') ?? '';
    expect(trail).toMatch(/reservation 2 created/);
    expect(trail).toMatch(/record -> succeeded[\s\S]*reservation 2 created[\s\S]*record -> succeeded/);
  }, 300_000);
});
