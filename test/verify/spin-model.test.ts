import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHECKS } from '../../scripts/verify/checks';
import { assertSpinInstalled, cleanVerifiers, runCheck } from '../../scripts/verify/spin';
import { promelaTransitionTable } from '../../scripts/verify/transition-table';

const check = (name: string) => {
  const found = CHECKS.find((c) => c.name === name);
  if (!found) throw new Error(`no check ${name}`);
  return found;
};

describe('the SPIN model of the protocol', () => {
  afterAll(cleanVerifiers);

  it('has its transition guards generated from the state machine in states.ts (regenerate if this fails)', () => {
    const file = path.join(import.meta.dirname, '..', '..', 'model', 'transitions.pml');
    expect(readFileSync(file, 'utf8')).toBe(promelaTransitionTable());
  });

  it('every property has a broken variant that must be refuted, so none passes vacuously', () => {
    const proved = new Set(CHECKS.filter((c) => c.expect === 'holds').map((c) => c.property));
    const refuted = new Set(CHECKS.filter((c) => c.expect === 'refuted').map((c) => c.property));
    expect([...proved].sort()).toEqual([...refuted].sort());
    const model = readFileSync(path.join(import.meta.dirname, '..', '..', 'model', 'ledger.pml'), 'utf8');
    for (const property of proved) expect(model).toMatch(new RegExp(`ltl ${property} \\{`));
  });

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
