import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLER_CHECKS } from '../../scripts/verify/caller-checks';

const model = readFileSync(path.join(import.meta.dirname, '..', '..', 'model', 'caller.pml'), 'utf8');

describe('the SPIN model of operations the caller executes', () => {
  it('checks every write a caller operation makes against the generated state table', () => {
    const rows = [
      'reserve_pending',
      'claim',
      'extend_lease',
      'record_outcome',
      'record_late_outcome',
      'caller_verdict',
      'expire_lease',
      'reconcile',
      'defer_attention',
      'exhaust_attempts',
    ];
    expect(rows.filter((row) => !model.includes(`FROM_${row}(`))).toEqual([]);
    expect(model).toContain('#include "transitions.pml"');
  });

  it('every caller property is proved and has a broken variant that must be refuted, each saying what its trail shows', () => {
    const proved = new Set(CALLER_CHECKS.filter((c) => c.expect === 'holds').map((c) => c.property));
    const refuted = new Set(CALLER_CHECKS.filter((c) => c.expect === 'refuted').map((c) => c.property));
    expect([...proved].sort()).toEqual([...refuted].sort());
    for (const property of proved) expect(model).toMatch(new RegExp(`ltl ${property} \\{`));
    expect(CALLER_CHECKS.filter((c) => c.expect === 'refuted' && c.shows === undefined)).toEqual([]);
    expect(CALLER_CHECKS.every((c) => c.model === 'caller.pml')).toBe(true);
  });

  it('every broken switch a check names exists in the model, so a typo cannot turn a variant into the correct model', () => {
    const switches = CALLER_CHECKS.flatMap((c) => c.defines.filter((d) => d.startsWith('BROKEN_')));
    expect(switches.length).toBeGreaterThanOrEqual(4);
    for (const s of switches) expect(model).toContain(`#ifdef ${s}`);
  });
});
