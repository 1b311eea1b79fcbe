import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { freshTable, useDynalite } from '../support/dynalite';
import { drive, ScriptedTool, testLedger } from '../support/harness';
import { movedItem, ProcessLink, StepFaults, stepFaults } from './support/process-faults';
import { replaySchedule } from './support/trace-replay';

/**
 * The model suite lets a move be missing from the transition log only where its fault layer saw a
 * write land that its writer never heard back from. These tests check both halves on a real dynalite:
 * the layer counts such a write, and the replay needs that count to accept the history.
 */

const db = useDynalite();

describe('writes that land unseen by their writer', () => {
  it('are told apart from writes that move nothing: a reservation and a transition count, a postponement does not', () => {
    expect(movedItem('PutItemCommand', { Item: { pk: { S: 'acme#op' }, sk: { S: 'op' } } })).toBe('acme#op');
    expect(
      movedItem('UpdateItemCommand', {
        Key: { pk: { S: 'acme#op' }, sk: { S: 'op' } },
        ExpressionAttributeNames: { '#state': 'state', '#history': 'history' },
      }),
    ).toBe('acme#op');
    // defer_attention and a late-outcome note keep the state and log no line
    expect(
      movedItem('UpdateItemCommand', {
        Key: { pk: { S: 'acme#op' }, sk: { S: 'op' } },
        ExpressionAttributeNames: { '#state': 'state', '#s0': 'attention_at' },
      }),
    ).toBeUndefined();
    expect(movedItem('GetItemCommand', { Key: { pk: { S: 'acme#op' } } })).toBeUndefined();
  });

  it('are counted when the writer dies right after its reservation landed, and only that count lets the replay bridge its missing line', async () => {
    const table = await freshTable(db.client);
    const unseen = new Map<string, number>();
    const link = new ProcessLink(db.endpoint, 1, (pk) => unseen.set(pk, (unseen.get(pk) ?? 0) + 1));
    const tool = new ScriptedTool('test.effect');
    const dying = testLedger(link.client, table, [tool.tool]);
    const healthy = testLedger(db.client, table, [tool.tool]);
    try {
      // The worker's first request is its reservation; it dies once the PutItem has landed.
      void stepFaults.run(new StepFaults({ crash: { at: 1, when: 'after' } }), () =>
        dying.submit({ operationId: 'op', arguments: { target: 'a' } }),
      );
      await link.died;
      const key = operationKey('acme', 'op');
      expect(await healthy.store.get(key)).toMatchObject({ state: 'pending', attempt: 1 });
      expect(dying.logs).toEqual([]);
      expect(unseen).toEqual(new Map([[key.pk, 1]]));

      // The reconciler expires the lease, finds nothing applied, the executor runs attempt 2.
      healthy.advance(60_000);
      await drive(healthy);
      expect(await healthy.store.get(key)).toMatchObject({ state: 'succeeded', attempt: 2 });
      const lines = [...dying.logs, ...healthy.logs];
      expect(lines[0]).toMatchObject({ state_before: 'pending', state_after: 'uncertain' });

      const keyOf = () => key.pk;
      expect(replaySchedule(lines, keyOf, unseen)).toEqual([]);
      const strict = replaySchedule(lines, keyOf, new Map());
      expect(strict.length).toBeGreaterThan(0);
      expect(strict[0]).toMatch(/1 move\(s\) missing from the log would bridge it, but the run allows 0/);
    } finally {
      link.destroy();
    }
  });
});
