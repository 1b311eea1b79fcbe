import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { reconcilePass, type ShardProgress } from '../../functions/engine/reconcile';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * A reconciler pass has a time budget: the invocation's remaining time. Six slow `reconcile` calls
 * (10 s each, against a 40 s budget) would outrun the Lambda timeout and kill the pass before it
 * flushed its metrics; instead the pass stops starting decisions while a worst case still fits, ends
 * on its own with its metrics flushed, and leaves the rest due for the next pass, which starts in the
 * shard this one stopped in. Time here is the invocation's remaining time, which each `reconcile` call
 * spends as a real one would: no test waits on the clock.
 */

const db = useDynalite();
const IDS = ['slow-1', 'slow-2', 'slow-3', 'slow-4', 'slow-5', 'slow-6'];

describe('reconciler time budget', () => {
  it('six slow reconciles with a small budget end cleanly, metrics flushed, the rest left for the next pass', async () => {
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

    expect(first.complete).toBe(false);
    // 40 s: a decision needs its 10 s reconcile deadline + 2 s commit, plus 2 s to end the pass.
    expect(first.actions).toEqual({ reconciled_applied: 3 });
    expect(mostInFlight).toBe(2);
    expect(flushed).toEqual([3]);
    expect(remaining).toBeGreaterThanOrEqual(ledger.deps.config.commitReserveMs);
    // A partial pass does not report a partial stock as the number of unresolved operations.
    expect(ledger.metrics.counts.has('UnresolvedOperations')).toBe(false);
    const states = await Promise.all(
      IDS.map(async (id) => (await ledger.store.get(operationKey('acme', id)))?.state),
    );
    expect(states.filter((s) => s === 'succeeded')).toHaveLength(3);
    expect(states.filter((s) => s === 'uncertain')).toHaveLength(3);

    // The next invocation, with a fresh budget, starts where this one stopped and takes the rest.
    remaining = 900_000;
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

  it('a pass with no time for even one decision reads, decides nothing and still ends cleanly', async () => {
    const tool = new ScriptedTool('test.slow', { timeoutMs: 10_000 });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    await ledger.submit({ operationId: 'late', arguments: { target: 'x' } });
    ledger.advance(10 * 60_000);
    const summary = await reconcilePass(ledger.deps, { ...ledger.req(), remainingMs: () => 5_000 });
    expect(summary).toMatchObject({ complete: false, actions: {} });
    expect((await ledger.store.get(operationKey('acme', 'late')))?.state).toBe('uncertain');
  });
});
