import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { reconcilePass } from '../../functions/engine/reconcile';
import { handleWorkMessage } from '../../functions/queue/handle-work-message';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * Regression tests for engine bugs found by the model-based test (`ledger-model.test.ts`), each
 * reduced to its smallest schedule and kept here once fixed.
 */

const db = useDynalite();
describe('found by the model', () => {
  /**
   * Schedule (as fast-check shrank it; with the generators of this commit, replay it with
   * `TOOL_LEDGER_MODEL_STALLS=all TOOL_LEDGER_MODEL_SEED=-1623823883
   * TOOL_LEDGER_MODEL_PATH=411:0:0:0:0:0:1:1:1:2:2:2:2 npx vitest run test/model/ledger-model.test.ts
   * -t 'scripted tools:'`):
   *
   * 1. A worker submits `op` synchronously. Its reservation (`(none) → pending`, attempt 1, lease =
   *    tool timeout + grace from the request's start) lands, and the worker pauses before `execute`
   *    (a GC pause, a stalled socket whose response arrives late, an SDK retry with backoff).
   * 2. The world's clock passes the lease. The reconciler moves the record `pending → uncertain`
   *    (lease expired), asks the target, which truthfully says `not_applied`, so the record becomes
   *    `failed_retryable` and is enqueued. A second worker claims attempt 2 and runs the effect.
   * 3. The first worker resumes. `runAttempt` calls `tool.execute` for attempt 1 although its lease's
   *    deadline has long passed: the AbortSignal's timer is `max(0, deadline - now)`, so it fires only
   *    on the next timer tick, after `execute` has started and the effect has been sent.
   *
   * The effect runs twice. SPEC §1 says an expired lease means the holder is dead; the engine breaks
   * that assumption itself by starting an attempt after its deadline. Fix (run-attempt.ts): before
   * calling `execute`, if `deps.clock() >= lease.deadline`, do not start the tool at all and record a
   * not-applied outcome (its `pending` condition fails harmlessly if the reconciler moved on).
   */
  it('a worker paused between its claim and execute past its lease does not run the effect after the retry did', async () => {
    const tool = new ScriptedTool('test.effect');
    const table = await freshTable(db.client);
    const pausedClient = db.newClient();
    let reserved: () => void = () => {};
    const landed = new Promise<void>((resolve) => {
      reserved = resolve;
    });
    let release: () => void = () => {};
    const resumed = new Promise<void>((resolve) => {
      release = resolve;
    });
    pausedClient.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if ((context as { commandName?: string }).commandName === 'PutItemCommand') {
          reserved();
          await resumed;
        }
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'pauseAfterReserve' },
    );
    const worker = testLedger(pausedClient, table, [tool.tool]);
    const world = testLedger(db.client, table, [tool.tool]);

    const first = worker.submit({ operationId: 'op', arguments: { target: 'a' } });
    await landed;
    // One clock for everyone: the paused worker's time moves too.
    worker.advance(60_000);
    world.advance(60_000);
    const pass = await reconcilePass(world.deps, world.req());
    expect(pass.actions).toMatchObject({ reconciled_not_applied: 1 });
    for (const message of world.queue.messages.splice(0)) {
      await handleWorkMessage(world.deps, world.req(), JSON.stringify(message), new Set(['acme']));
    }
    expect(await world.store.get(operationKey('acme', 'op'))).toMatchObject({
      state: 'succeeded',
      attempt: 2,
    });
    expect(tool.effects).toHaveLength(1);

    release();
    await first;
    expect(tool.effects.map((e) => e.attempt)).toEqual([2]);
    expect(tool.starts.map((s) => s.attempt)).toEqual([2]);
  });
});
