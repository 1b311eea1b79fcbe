import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { RECORD_FORMAT } from '../../functions/contract/table';
import { LedgerUnavailableError } from '../../functions/domain/errors';
import { toItem } from '../../functions/ledger/record-item';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * Every record says which format it is written in, and a reader refuses one of a later format (code
 * rolled back over records of a newer release) instead of misreading it and repeating an effect.
 */

const db = useDynalite();

describe('record format', () => {
  it('a new record carries the format this release writes', async () => {
    const tool = new ScriptedTool();
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    await ledger.submit({ operationId: 'f-1', arguments: { target: 'x' } });
    expect((await ledger.store.get(operationKey('acme', 'f-1')))?.record_format).toBe(RECORD_FORMAT);
  });

  it('a record of a later format is refused as ledger_unavailable, and nothing runs', async () => {
    const tool = new ScriptedTool();
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    await ledger.submit({ operationId: 'f-2', arguments: { target: 'x' } });
    const record = (await ledger.store.get(operationKey('acme', 'f-2')))!;
    await db.client.send(
      new PutItemCommand({ TableName: table, Item: toItem({ ...record, record_format: RECORD_FORMAT + 1 }) }),
    );
    await expect(ledger.store.get(operationKey('acme', 'f-2'))).rejects.toBeInstanceOf(
      LedgerUnavailableError,
    );
    // Another process (no warm cache of the record) retrying the call.
    const cold = testLedger(db.client, table, [tool.tool]);
    await expect(cold.submit({ operationId: 'f-2', arguments: { target: 'x' } })).rejects.toMatchObject({
      code: 'ledger_unavailable',
    });
    expect(tool.starts).toHaveLength(1);
  });
});
