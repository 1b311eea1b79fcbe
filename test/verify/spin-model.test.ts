import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TRANSITIONS, type TransitionName } from '../../functions/domain/states';
import { CHECKS } from '../../scripts/verify/checks';
import { promelaTransitionTable } from '../../scripts/verify/transition-table';

describe('the SPIN model of the protocol', () => {
  it('has its transition guards generated from the state machine in states.ts (regenerate if this fails)', () => {
    const file = path.join(import.meta.dirname, '..', '..', 'model', 'transitions.pml');
    expect(readFileSync(file, 'utf8')).toBe(promelaTransitionTable());
  });

  it('models every transition of states.ts: a row the model never takes would leave the proof about another machine', () => {
    // Regenerating transitions.pml after adding a row keeps the test above green; this one fails
    // until some write of model/ledger.pml is checked against the new row.
    const model = readFileSync(path.join(import.meta.dirname, '..', '..', 'model', 'ledger.pml'), 'utf8');
    const unmodelled = Object.keys(TRANSITIONS).filter((name) => !model.includes(`FROM_${name}(`));
    expect(unmodelled).toEqual([]);
  });

  it('models every actor of every row: a writer the table names that no write of the model is checked as would go unproved', () => {
    // The model asserts each write's actor against the table (BY_x in transitions.pml), so a write by an
    // actor the table leaves out fails SPIN; this is the other direction.
    const model = withActorMacros(
      readFileSync(path.join(import.meta.dirname, '..', '..', 'model', 'ledger.pml'), 'utf8'),
    );
    const unmodelled = (Object.keys(TRANSITIONS) as TransitionName[]).flatMap((name) =>
      TRANSITIONS[name].actors
        .filter((actor) => !model.includes(`BY_${name}(ACT_${actor})`))
        .map((actor) => `${name} by ${actor}`),
    );
    expect(unmodelled).toEqual([]);
  });

  it('every broken variant says what its counterexample must show, so it cannot be refuted for another reason', () => {
    const silent = CHECKS.filter((c) => c.expect === 'refuted' && c.shows === undefined).map((c) => c.name);
    expect(silent).toEqual([]);
  });

  it('every property has a broken variant that must be refuted, so none passes vacuously', () => {
    const proved = new Set(CHECKS.filter((c) => c.expect === 'holds').map((c) => c.property));
    const refuted = new Set(CHECKS.filter((c) => c.expect === 'refuted').map((c) => c.property));
    expect([...proved].sort()).toEqual([...refuted].sort());
    const model = readFileSync(path.join(import.meta.dirname, '..', '..', 'model', 'ledger.pml'), 'utf8');
    for (const property of proved) expect(model).toMatch(new RegExp(`ltl ${property} \\{`));
  });
});

/**
 * The model's text with each use of a one-parameter macro whose body checks a write's actor
 * (`#define EXHAUST(who) … BY_exhaust_attempts(who) …`) spelled out as that check for the actor it is
 * given (`EXHAUST(ACT_worker)` adds `BY_exhaust_attempts(ACT_worker)`).
 */
function withActorMacros(model: string): string {
  const extra: string[] = [];
  const macros = model.matchAll(/#define (\w+)\((\w+)\)((?:.*\\\n)*.*)/g);
  for (const [, macro, param, body] of macros) {
    const checks = [...(body ?? '').matchAll(new RegExp(`BY_(\\w+)\\(${param}\\)`, 'g'))].map((m) => m[1]);
    if (checks.length === 0) continue;
    for (const use of model.matchAll(new RegExp(`\\b${macro}\\((ACT_\\w+)\\)`, 'g'))) {
      for (const name of checks) extra.push(`BY_${name}(${use[1]})`);
    }
  }
  return `${model}\n${extra.join('\n')}`;
}
