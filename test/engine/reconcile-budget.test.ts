import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { reconcilePass, type ShardProgress } from '../../functions/engine/reconcile';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * A reconciler pass has a time budget: the invocation's remaining time. Six slow `reconcile` calls
 * (10 s each, against a 40 s budget) would outrun the Lambda timeout and kill the pass before it
 * flushed its metrics; instead the pass starts a check only while its worst case still fits, defers
 * (with backoff) the checks that no longer fit and moves on, ends on its own with its metrics flushed,
 * and the next pass takes the deferred ones. Time here is the invocation's remaining time, which each
 * `reconcile` call spends as a real one would: no test waits on the clock.
 */

const db = useDynalite();
const IDS = ['slow-1', 'slow-2', 'slow-3', 'slow-4', 'slow-5', 'slow-6'];

describe('reconciler time budget', () => {
  it('six slow reconciles with a small budget end cleanly, metrics flushed, the rest deferred to the next pass', async () => {
    let remaining = 40_000;
    let inFlight = 0;
    let mostInFlight = 0;
    const reconciled: string[] = [];
    const tool = new ScriptedTool('test.slow', {
      timeoutMs: 10_000,
      reconcile: async (_args, ctx) => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        remaining -= 10_000; // what the call costs the invocation
        await new Promise((resolve) => setImmediate(resolve)); // let the other decisions start
        inFlight -= 1;
        reconciled.push(ctx.operationId);
        return { status: 'applied', result: { reconciled: true } };
      },
    });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { attentionShards: 2 });
    for (const id of IDS) {
      tool.next({ kind: 'uncertain', code: 'reset_after_send' });
      expect((await ledger.submit({ operationId: id, arguments: { target: id } })).record.state).toBe(
        'uncertain',
      );
    }
    ledger.advance(10 * 60_000);
    // What had been recorded when the pass flushed: its decisions, not lost with a killed invocation.
    const flushed: number[] = [];
    ledger.metrics.flush = () => {
      flushed.push(ledger.metrics.total('Reconciliations'));
    };

    const req = { ...ledger.req(), remainingMs: () => remaining };
    const first = await reconcilePass(ledger.deps, req, { parallelism: 2 });

    // Every record was reached: the checks that did not fit were deferred, not the end of the pass.
    expect(first.complete).toBe(true);
    // 40 s: a decision needs its 10 s reconcile deadline + 2 s commit, plus 2 s to end the pass.
    expect(first.actions).toEqual({ reconciled_applied: 3, deferred_for_time: 3 });
    expect(first.deferred).toBe(3);
    expect(mostInFlight).toBe(2);
    expect(flushed).toEqual([6]);
    expect(remaining).toBeGreaterThanOrEqual(ledger.deps.config.commitReserveMs);
    // The pass said how much it saw and that it reached it all.
    expect(ledger.metrics.counts.get('UnresolvedOperations')).toBe(6);
    expect(ledger.metrics.counts.get('IncompleteReconcilePasses')).toBe(0);
    const states = await Promise.all(
      IDS.map(async (id) => (await ledger.store.get(operationKey('acme', id)))?.state),
    );
    expect(states.filter((s) => s === 'succeeded')).toHaveLength(3);
    expect(states.filter((s) => s === 'uncertain')).toHaveLength(3);

    // Deferred: not due again until its backoff has passed, so an immediate pass does not restart there.
    remaining = 900_000;
    const again = await reconcilePass(ledger.deps, { ...ledger.req(), remainingMs: () => remaining });
    expect(again).toMatchObject({ read: 0, actions: {} });
    ledger.advance(60_000);

    // The next invocation, with a fresh budget, takes the rest.
    const shards: ShardProgress[] = [];
    const second = await reconcilePass(
      ledger.deps,
      { ...ledger.req(), remainingMs: () => remaining },
      {
        startShard: first.nextShard,
        onShard: (progress) => shards.push(progress),
      },
    );
    expect(shards[0]?.shard).toBe(`s00${first.nextShard}`);
    expect(second).toMatchObject({ complete: true, actions: { reconciled_applied: 3 } });
    expect(new Set(reconciled)).toEqual(new Set(IDS));
    expect(reconciled).toHaveLength(6); // nothing was asked twice
    expect(tool.starts).toHaveLength(6); // and nothing ran again
  });

  it('a pass with time for a write but not for a check defers it and still ends cleanly', async () => {
    const tool = new ScriptedTool('test.slow', { timeoutMs: 10_000 });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    await ledger.submit({ operationId: 'late', arguments: { target: 'x' } });
    ledger.advance(10 * 60_000);
    // The last 5 s of a 60 s invocation.
    const summary = await reconcilePass(
      ledger.deps,
      { ...ledger.req(), remainingMs: () => 5_000 },
      { invocationMs: 60_000 },
    );
    expect(summary).toMatchObject({ complete: true, deferred: 1, actions: { deferred_for_time: 1 } });
    expect(await ledger.store.get(operationKey('acme', 'late'))).toMatchObject({
      state: 'uncertain',
      reconcile_deferrals: 1,
    });
  });

  it('a pass with no time for even a write reads, decides nothing and says it is incomplete', async () => {
    const tool = new ScriptedTool('test.slow', { timeoutMs: 10_000 });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    await ledger.submit({ operationId: 'late', arguments: { target: 'x' } });
    ledger.advance(10 * 60_000);
    const summary = await reconcilePass(ledger.deps, { ...ledger.req(), remainingMs: () => 3_000 });
    expect(summary).toMatchObject({ complete: false, actions: {} });
    expect(ledger.metrics.counts.get('IncompleteReconcilePasses')).toBe(1);
    // What it saw is still reported: at least one due record (a lower bound when incomplete).
    expect(ledger.metrics.counts.get('UnresolvedOperations')).toBe(1);
    expect((await ledger.store.get(operationKey('acme', 'late')))?.state).toBe('uncertain');
  });
});
