import { fc, it } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it as plainIt } from 'vitest';
import { logger } from '../../functions/observability/logger';
import { type DynaliteHandle, startDynalite } from '../support/dynalite';
import {
  type CallerSchedule,
  callerCoverageLine,
  callerScheduleArb,
  callerScheduleArbWith,
  runCallerSchedule,
} from './support/caller-world';
import { modelParams, modelTimeout } from './support/params';
import { traceLine } from './support/trace-replay';

/**
 * The model-based fault suite for operations their caller executes. Each run generates 1–3 such
 * operations (two tenants may share an ID) and two or three callers per operation running the
 * protocol at once (claim with a claim ID → maybe a heartbeat → the effect → the outcome; on an
 * unknown outcome, the caller's own reconcile and a verdict), with a fault possible at every step: a
 * caller crashing before or after any message (it restarts as a new process with a new claim ID), the
 * answer of a claim, heartbeat, outcome or verdict lost after the write landed (the caller retries it
 * as `ledger.run` does), a message delivered twice at once or again later (after the lease ran out),
 * the clock moving past leases, reconciler passes. Effects go to a counting target that a caller's
 * reconcile and a truthful operator can ask. Each schedule is driven to quiescence, then checked:
 * every effect applied at most once, a succeeded record holds what the single effect returned, no
 * effect hidden behind a failure, nothing stuck, tenants isolated, and the schedule's transition lines
 * replayed against the model's transition relation with none rejected.
 */

let db: DynaliteHandle;
beforeAll(async () => {
  db = await startDynalite();
  logger.setLogLevel('SILENT');
});
afterAll(async () => {
  await db?.stop();
});

const RUNS = 300;

describe('model-based: callers executing their own effects under crashes, lost and late messages', () => {
  // Printed here, before the broken caller's schedules add to the same counters.
  afterAll(() => {
    console.log(callerCoverageLine());
    console.log(traceLine());
  });

  it.prop([callerScheduleArb], modelParams<[CallerSchedule]>(RUNS))(
    'no effect twice, no outcome lost, nothing stuck, tenants isolated, every line allowed by the model',
    async (schedule) => {
      await runCallerSchedule(db.client, schedule, {
        sequentialDuplicateOutcomes: process.env.TOOL_LEDGER_MODEL_SEQUENTIAL_OUTCOMES === '1',
      });
    },
    modelTimeout(RUNS),
  );
});

describe('model-based: the caller suite can fail', () => {
  plainIt(
    'schedules with more lost answers catch a broken caller that runs its effect again after a lost outcome answer',
    async () => {
      // Schedules from a fixed seed until one shows the duplicate effect (a lost outcome answer while
      // the effect succeeds takes a few dozen schedules).
      let caught = '';
      let tried = 0;
      for (const schedule of fc.sample(callerScheduleArbWith(4), { numRuns: 300, seed: 7 })) {
        tried += 1;
        try {
          await runCallerSchedule(db.client, schedule, { rerunEffectAfterLostOutcome: true });
        } catch (error) {
          if (/the effect ran 2 times/.test(String(error))) {
            caught = String(error);
            break;
          }
        }
      }
      console.log(
        `broken caller (effect re-run after a lost outcome answer) caught after ${tried} schedules`,
      );
      expect(caught).toMatch(/the effect ran 2 times/);
    },
    modelTimeout(300),
  );
});
