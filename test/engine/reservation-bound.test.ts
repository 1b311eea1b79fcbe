import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { deferAttention, reconcileApplied } from '../../functions/engine/transitions';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/*
 * A decision (the reconciler's, an operator's, an approver's) is read from one reservation and written
 * later. If in between that operation ended, expired and its key was reserved again by a new operation
 * in the same state and attempt, the decision must not land on the new operation. The model checker
 * found that state and attempt alone did not guarantee it; the write is now bound to `reservation_id`.
 */

const db = useDynalite();
describe('decisions are bound to the reservation they read', () => {
  it('a stale decision does not land on a new operation that reused the key, even in the same state and attempt', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'reused-1', arguments: { target: 'a' } });
    const key = operationKey('acme', 'reused-1');
    const read = await ledger.store.get(key);
    expect(read?.state).toBe('uncertain');

    // What a new reservation of the same key would leave: same state and attempt, another reservation.
    const doc = DynamoDBDocumentClient.from(db.client);
    const replaced = { ...read!, reservation_id: 'a-new-reservation' };
    await doc.send(new PutCommand({ TableName: ledger.store.tableName, Item: replaced }));

    const decided = await reconcileApplied(ledger.deps, ledger.req(), read!, tool.tool, {
      json: JSON.stringify({ from: 'the old operation' }),
      code: 'succeeded',
    });
    expect(decided.ok).toBe(false);
    const deferred = await deferAttention(ledger.deps, ledger.req(), read!, Date.now() + 60_000);
    expect(deferred.ok).toBe(false);
    const now = await ledger.store.get(key);
    expect(now).toMatchObject({ state: 'uncertain', reservation_id: 'a-new-reservation' });
    expect(now?.result ?? null).toBeNull();
  });

  it('the same decision on the reservation it read is applied', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'kept-1', arguments: { target: 'a' } });
    const read = await ledger.store.get(operationKey('acme', 'kept-1'));
    const decided = await reconcileApplied(ledger.deps, ledger.req(), read!, tool.tool, {
      json: 'null',
      code: 'succeeded',
    });
    expect(decided.ok).toBe(true);
  });
});
