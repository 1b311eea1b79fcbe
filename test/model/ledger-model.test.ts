import { it } from '@fast-check/vitest';
import { afterAll, beforeAll, describe } from 'vitest';
import { logger } from '../../functions/observability/logger';
import { coverageLine } from './support/coverage';
import { modelParams, modelTimeout, stallBeforeExecute } from './support/params';
import { runSchedule } from './support/run-schedule';
import { REAL_KINDS, SCRIPTED_KINDS, type Schedule, scheduleArb } from './support/schedule';
import { startSharedEnv } from './support/shared-env';
import { traceLine } from './support/trace-replay';
import type { SharedEnv } from './support/world';

/**
 * The model-based test of issue 7. Each run generates a schedule (see `support/schedule.ts`): two
 * tenants whose operations share IDs, worker processes submitting them (sync, async, and as the
 * executor handling queue messages, possibly twice at once), crashes at every DynamoDB request
 * boundary, lost responses, throttling, a queue that is down, workers pausing before their commit,
 * clock advances past leases, backoffs and approval deadlines, reconciler passes (sometimes two at
 * once), approvals and truthful operator resolutions. The schedule runs against dynalite with tools
 * whose effects are counted (scripted tools, the shipped workspace tools on a temp folder, and
 * `webhook.post` against counting servers), then the world is driven to quiescence and every
 * invariant of `support/invariants.ts` is checked, and the schedule's transition lines are replayed
 * against the SPIN model's transition relation (`support/trace-replay.ts`). A failure prints the shrunk schedule with a seed
 * and a path; see `support/params.ts` for how to replay it.
 */

let shared: Awaited<ReturnType<typeof startSharedEnv>>;
let env: SharedEnv;
beforeAll(async () => {
  shared = await startSharedEnv();
  env = shared.env;
  // Thousands of schedules log thousands of expected warnings; the canary test checks what they contain.
  logger.setLogLevel('SILENT');
});
afterAll(async () => {
  console.log(coverageLine());
  console.log(traceLine());
  await shared?.stop();
});

// 60 fewer than before, for the 40 schedules of key-reuse.test.ts (each about 1.5× as long): the
// model suite's CI time stays about the same.
const SCRIPTED_RUNS = 660;
const MIXED_RUNS = 280;

describe('model-based: random schedules of workers, crashes, faults, reconcilers and operators', () => {
  it.prop(
    [
      scheduleArb({
        kinds: SCRIPTED_KINDS,
        maxOps: 4,
        maxGroups: 6,
        maxStepsPerGroup: 3,
        stallBeforeExecute: stallBeforeExecute(),
      }),
    ],
    modelParams<[Schedule]>(SCRIPTED_RUNS),
  )(
    'scripted tools: no effect twice, replays equal the first outcome, nothing lost or stuck, tenants isolated',
    async (schedule) => {
      await runSchedule(env, schedule);
    },
    modelTimeout(SCRIPTED_RUNS),
  );

  it.prop(
    [
      scheduleArb({
        kinds: [...SCRIPTED_KINDS, ...REAL_KINDS],
        maxOps: 4,
        maxGroups: 6,
        maxStepsPerGroup: 3,
        stallBeforeExecute: stallBeforeExecute(),
      }),
    ],
    modelParams<[Schedule]>(MIXED_RUNS),
  )(
    'shipped tools (workspace files, webhooks) mixed with scripted ones keep the same guarantees',
    async (schedule) => {
      await runSchedule(env, schedule);
    },
    modelTimeout(MIXED_RUNS),
  );
});
