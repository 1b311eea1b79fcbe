import type { fc } from '@fast-check/vitest';

/**
 * fast-check parameters of the model suite, from the environment:
 *
 * | variable | meaning |
 * | --- | --- |
 * | `TOOL_LEDGER_MODEL_RUNS` | schedules per model property (CI default: the `runs` argument) |
 * | `TOOL_LEDGER_MODEL_SEED` | replay: the seed fast-check printed |
 * | `TOOL_LEDGER_MODEL_PATH` | replay: the path fast-check printed (jumps straight to the shrunk case) |
 * | `TOOL_LEDGER_MODEL_VERBOSE` | `1`: print every failing step while shrinking |
 * | `TOOL_LEDGER_MODEL_STALLS` | `commit`: pause workers only between `execute` and the commit (default: also between a claim and `execute`) |
 */
export function modelParams<T>(runs: number): fc.Parameters<T> {
  const env = process.env;
  const params: fc.Parameters<T> = {
    numRuns: positive(env.TOOL_LEDGER_MODEL_RUNS) ?? runs,
    verbose: env.TOOL_LEDGER_MODEL_VERBOSE === '1' ? 2 : 0,
  };
  const seed = env.TOOL_LEDGER_MODEL_SEED;
  if (seed !== undefined && seed !== '') params.seed = Number(seed);
  const path = env.TOOL_LEDGER_MODEL_PATH;
  if (path !== undefined && path !== '') params.path = path;
  return params;
}

function positive(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error('TOOL_LEDGER_MODEL_RUNS must be a positive integer');
  return n;
}

/** Timeout of a property test: generous, scaled by the number of runs. */
export function modelTimeout(runs: number): number {
  const n = positive(process.env.TOOL_LEDGER_MODEL_RUNS) ?? runs;
  return 120_000 + n * 2_000;
}

/**
 * Whether schedules may pause a worker between its claim and `execute`: on by default since the engine
 * never starts a tool at or past its deadline (the bug in `found-bugs.test.ts`);
 * `TOOL_LEDGER_MODEL_STALLS=commit` keeps only the pauses between `execute` and the commit.
 */
export function stallBeforeExecute(): boolean {
  return process.env.TOOL_LEDGER_MODEL_STALLS !== 'commit';
}
