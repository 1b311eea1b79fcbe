import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeState } from '../../functions/engine/transitions';
import { operationKey } from '../../functions/ledger/keys';
import { type DynaliteHandle, freshTable, startDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/*
 * The record's history is stored one JSON text per entry (a list of strings), which is cheaper to
 * write than a map per entry; the engine and the API see the same entries as before. Items whose
 * history was written as maps (by an earlier version) read as they are and take new entries after them.
 */

let db: DynaliteHandle;
beforeAll(async () => {
  db = await startDynalite();
});
afterAll(async () => {
  await db.stop();
});

describe('the stored history', () => {
  it('keeps one JSON text per transition and reads back as the entries the engine wrote', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const out = await ledger.submit({ operationId: 'hist-1', arguments: { target: 'a' } });
    expect(out.kind).toBe('completed');
    const key = operationKey('acme', 'hist-1');

    const raw = await db.client.send(
      new GetItemCommand({
        TableName: ledger.store.tableName,
        Key: { pk: { S: key.pk }, sk: { S: key.sk } },
        ConsistentRead: true,
      }),
    );
    const stored = raw.Item?.history?.L ?? [];
    expect(stored.map((entry) => Object.keys(entry))).toEqual([['S'], ['S']]);
    const texts = stored.map((entry) => JSON.parse(entry.S as string));
    expect(texts).toMatchObject([
      { from: null, to: 'pending', attempt: 1 },
      { from: 'pending', to: 'succeeded', attempt: 1, code: 'succeeded' },
    ]);

    const record = await ledger.store.get(key);
    expect(record?.history).toEqual(texts);
    // The record the commit returned (built from the one reserved) tells the same story.
    expect(out.record.history).toEqual(texts);
  });

  it('reads a history written as maps and appends the next transition after it', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'hist-2', arguments: { target: 'a' } });
    const key = operationKey('acme', 'hist-2');
    const read = await ledger.store.get(key);
    expect(read?.state).toBe('uncertain');

    // The same record as an earlier version stored it: every history entry a map.
    const doc = DynamoDBDocumentClient.from(db.client, {
      marshallOptions: { removeUndefinedValues: true },
    });
    await doc.send(new PutCommand({ TableName: ledger.store.tableName, Item: read! }));
    const old = await ledger.store.get(key);
    expect(old?.history).toEqual(read?.history);

    const decided = await changeState(ledger.deps, ledger.req(), old!, tool.tool, {
      transition: 'reconcile',
      expect: { states: ['uncertain'], attempt: old!.attempt },
      to: 'succeeded',
      code: 'reconciled_applied',
      set: { result: JSON.stringify({ ok: true }), reconciled: true },
    });
    expect(decided.ok).toBe(true);
    const after = await ledger.store.get(key);
    expect(after?.history?.map((h) => [h.from, h.to])).toEqual([
      [null, 'pending'],
      ['pending', 'uncertain'],
      ['uncertain', 'succeeded'],
    ]);
    expect(decided.ok && decided.record.history).toEqual(after?.history);
  });
});
