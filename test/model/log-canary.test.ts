import { it } from '@fast-check/vitest';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect } from 'vitest';
import { logger } from '../../functions/observability/logger';
import { PowertoolsLedgerMetrics } from '../../functions/observability/metrics';
import { logTransition } from '../../functions/observability/transition-log';
import { CANARY_PREFIX } from './support/catalogue';
import { modelParams } from './support/params';
import { runSchedule } from './support/run-schedule';
import { REAL_KINDS, SCRIPTED_KINDS, type Schedule, type Step, scheduleArb } from './support/schedule';
import { startSharedEnv } from './support/shared-env';
import { traceLine } from './support/trace-replay';

/**
 * SPEC §9: no log line carries argument values, results, headers or tool error messages. Every
 * argument, path, header, webhook body and result of these schedules carries a canary (and a scripted
 * tool throws errors whose message repeats its arguments); the transition lines (through the real
 * Powertools sink) and everything written to stdout and stderr meanwhile (the logger, EMF metrics)
 * must contain none of them.
 */

let shared: Awaited<ReturnType<typeof startSharedEnv>>;
const written: string[] = [];
const originals = { stdout: process.stdout.write, stderr: process.stderr.write };

function capture(stream: NodeJS.WriteStream): void {
  stream.write = ((chunk: unknown, ...rest: unknown[]) => {
    written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    done?.();
    return true;
  }) as typeof stream.write;
}

beforeAll(async () => {
  shared = await startSharedEnv();
  logger.setLogLevel('INFO');
});
afterAll(async () => {
  console.log(traceLine());
  await shared?.stop();
});
beforeEach(() => {
  written.length = 0;
  capture(process.stdout);
  capture(process.stderr);
});
afterEach(() => {
  process.stdout.write = originals.stdout;
  process.stderr.write = originals.stderr;
});

const RUNS = 30;

/** Every operation of the schedule is called at least once, at the start, so every tool runs. */
function everyOperationSubmitted(schedule: Schedule): Schedule {
  const first: Step[] = schedule.ops.map((_, op) => ({
    kind: 'submit',
    proc: op,
    op,
    mode: op % 3 === 2 ? 'async' : 'sync',
    variant: 0,
    fault: {},
  }));
  return { ...schedule, groups: [{ kind: 'steps', steps: first }, ...schedule.groups] };
}

describe('log canaries', () => {
  it('the capture sees what the logger writes (the check can fail)', () => {
    logger.info('control line', { control: `${CANARY_PREFIX}-control` });
    const seen = written.join('');
    process.stdout.write = originals.stdout;
    expect(seen).toContain(`${CANARY_PREFIX}-control`);
  });

  it.prop(
    [
      scheduleArb({
        kinds: [...SCRIPTED_KINDS, ...REAL_KINDS],
        maxOps: 6,
        maxGroups: 16,
        maxStepsPerGroup: 4,
        stallBeforeExecute: false,
      }).map(everyOperationSubmitted),
    ],
    // Seeds replay here too; the run count stays fixed (TOOL_LEDGER_MODEL_RUNS is for the model).
    { ...modelParams<[Schedule]>(RUNS), numRuns: RUNS },
  )(
    'no transition line and no stdout/stderr output of big random schedules carries an argument or result value',
    async (schedule) => {
      const world = await runSchedule(shared.env, schedule, {
        log: logTransition,
        metrics: () => new PowertoolsLedgerMetrics(),
      });
      const through = written.filter((chunk) => chunk.includes('operation transition')).length;
      const leaked = written.filter((chunk) => chunk.includes(CANARY_PREFIX));
      written.length = 0;
      // The transition lines really went through the captured streams.
      expect(through).toBeGreaterThanOrEqual(world.logs.length);
      expect(world.logs.length).toBeGreaterThan(0);
      expect(leaked).toEqual([]);
    },
    120_000,
  );
});
