import { availableParallelism } from 'node:os';
import { CALLER_CHECKS } from './caller-checks';
import { CHECKS, type Check } from './checks';
import { assertSpinInstalled, type CheckResult, cleanVerifiers, runCheck } from './spin';

/**
 * Runs every SPIN check of `checks.ts` (or those whose names are given), two at a time on two cores,
 * and prints, per check, the states explored, the depth, the errors and the time (its own run, plus
 * generating and compiling its verifier when its cast is new); for a refuted variant, the
 * counterexample.
 * Exits 1 when a property that must hold fails or a broken variant is not refuted.
 */
export async function modelCheck(names: readonly string[] = []): Promise<CheckResult[]> {
  await assertSpinInstalled();
  const all: readonly Check[] = [...CHECKS, ...CALLER_CHECKS];
  const chosen: readonly Check[] = names.length === 0 ? all : all.filter((c) => names.includes(c.name));
  const results: (CheckResult | undefined)[] = chosen.map(() => undefined);
  let next = 0;
  let printed = 0;
  // Each verifier is single-threaded: run as many at once as there are cores (at most JOBS), and
  // print the results in the order of CHECKS as they come in.
  const worker = async () => {
    while (next < chosen.length) {
      const index = next++;
      results[index] = await runCheck(chosen[index] as Check);
      while (printed < chosen.length && results[printed] !== undefined)
        print(results[printed++] as CheckResult);
    }
  };
  try {
    await Promise.all(Array.from({ length: jobs() }, worker));
  } finally {
    await cleanVerifiers();
  }
  return results as CheckResult[];
}

/** Verifiers run at once: `TOOL_LEDGER_VERIFY_JOBS`, else one per core, at most two. */
function jobs(): number {
  const wanted = Number(process.env.TOOL_LEDGER_VERIFY_JOBS ?? Math.min(2, availableParallelism()));
  return Number.isSafeInteger(wanted) && wanted > 0 ? wanted : 1;
}

function print(r: CheckResult): void {
  const verdict =
    r.check.expect === 'holds'
      ? r.ok
        ? 'proved'
        : 'FAILED'
      : r.ok
        ? 'refuted, as it must be'
        : r.errors > 0
          ? `refuted, but the trail does not show ${String(r.check.shows)}`
          : 'NOT REFUTED';
  console.log(
    `${r.ok ? 'ok ' : 'NOT'} ${r.check.name.padEnd(40)} states: ${String(r.states).padStart(9)}  depth: ${String(r.depth).padStart(4)}  errors: ${r.errors}  ${r.seconds.toFixed(1)} s  ${verdict}`,
  );
  console.log(`    ${r.check.about}  [${r.check.defines.join(' ')}]`);
  if (r.trail && r.check.expect === 'refuted') {
    const shown = r.trail.length > 30 ? [...r.trail.slice(0, 12), '...', ...r.trail.slice(-17)] : r.trail;
    for (const line of shown) console.log(`      ${line}`);
  } else if (r.trail) {
    for (const line of r.trail) console.log(`      ${line}`);
  }
}
