import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import dynaliteDb from 'dynalite/db/index.js';
import { describe, expect, it } from 'vitest';
import { startLocalDynamo } from '../../functions/local/dynamo-server';
import { repairIndexes } from '../../functions/local/index-repair';
import { auditIndexes } from '../../scripts/soak/ledger-audit';
import { clientFor } from '../support/dynalite';
import { useTempFolders } from '../support/temp-folders';

/**
 * The start-up repair of local mode's indexes, on the two states a `kill -9` leaves between dynalite's
 * separate writes (index entries first, then the item): made here exactly, by applying an update's
 * index writes and not its item write, then checked through DynamoDB's own API.
 */

const TABLE = 'tool-ledger';
const folder = useTempFolders('tool-ledger-repair-');

function record(id: string, state: string, at: number, updated: string): Record<string, unknown> {
  const base = {
    pk: `local#${id}`,
    sk: 'op',
    tenant: 'local',
    operation_id: id,
    tool: 'webhook.post',
    state,
    attempt: 1,
    updated_at: updated,
    created_at: '2026-01-01T00:00:00.000Z',
  };
  if (state === 'succeeded') return base;
  return { ...base, attention_shard: 's001', attention_at: at, unresolved_tenant: 'local', unresolved_at: 1 };
}

/** A ledger folder holding `items`, written through dynalite's API. */
async function ledgerWith(items: Record<string, unknown>[]): Promise<string> {
  const path = await folder();
  const dynamo = await startLocalDynamo({ path, port: 0, tableName: TABLE });
  const client = clientFor(dynamo.endpoint);
  for (const item of items) await client.send(new PutItemCommand({ TableName: TABLE, Item: marshall(item) }));
  client.destroy();
  await dynamo.stop();
  return path;
}

/** What dynalite would have written to the indexes for `before` → `after`, without the item itself. */
async function crashBetween(
  path: string,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  phase: 'after-deletes' | 'after-puts',
): Promise<void> {
  const store = dynaliteDb.create({ path });
  await store.db.open();
  try {
    const table = (await store.db.get(`table~${TABLE}`)) as Parameters<typeof dynaliteDb.getIndexActions>[3];
    const actions = dynaliteDb.getIndexActions(
      table.GlobalSecondaryIndexes ?? [],
      marshall(before) as never,
      marshall(after) as never,
      table,
    );
    const prefix = (index: string) => `index-global~${TABLE}~${index}~`;
    await store.db.batch([
      ...actions.deletes.map((d) => ({ type: 'del' as const, key: `${prefix(d.index)}${d.key}` })),
      ...(phase === 'after-puts'
        ? actions.puts.map((p) => ({
            type: 'put' as const,
            key: `${prefix(p.index)}${p.key}`,
            value: p.item,
          }))
        : []),
    ]);
  } finally {
    await store.db.close();
  }
}

async function audit(path: string) {
  const dynamo = await startLocalDynamo({ path, port: 0, tableName: TABLE });
  try {
    return await auditIndexes(dynamo.endpoint, TABLE);
  } finally {
    await dynamo.stop();
  }
}

describe('start-up repair of the indexes', () => {
  it('puts back a record whose index entries were deleted before its item was written', async () => {
    const pending = record('a', 'pending', 100, 't1');
    const path = await ledgerWith([pending, record('b', 'queued', 50, 't1')]);
    await crashBetween(path, pending, record('a', 'uncertain', 200, 't2'), 'after-deletes');
    expect((await audit(path)).outsideIndexes).toEqual(['a']);

    const report = await repairIndexes(path, TABLE);
    expect(report).toMatchObject({ records: 2, unresolved: 2, missing: 1, stale: 0, orphaned: 0 });
    expect(report.queued.map((r) => r.operation_id)).toEqual(['b']);
    expect(await audit(path)).toMatchObject({ outsideIndexes: [], staleEntries: [] });
  });

  it('deletes entries that show a state the record never reached, and rewrites changed copies', async () => {
    const pending = record('a', 'pending', 100, 't1');
    const queued = record('c', 'queued', 100, 't1');
    const path = await ledgerWith([pending, queued]);
    // pending → uncertain moves the attention entry: the old one is gone, the new one shows a state
    // the item never reached, and the operators' entry (same key) was overwritten with it.
    await crashBetween(path, pending, record('a', 'uncertain', 200, 't2'), 'after-puts');
    // Same index keys, new content: the entries were rewritten with a state the item does not have.
    await crashBetween(path, queued, { ...queued, state: 'pending', updated_at: 't2' }, 'after-puts');
    const before = await audit(path);
    // `attention` holds keys only, so c's entry there (same keys) shows nothing wrong; `unresolved`
    // projects the state, which is wrong for c.
    expect(before.staleEntries.sort()).toEqual(['a', 'a', 'c']);

    const report = await repairIndexes(path, TABLE);
    expect(report).toMatchObject({ missing: 1, stale: 2, orphaned: 1 });
    expect(await audit(path)).toMatchObject({ records: 2, outsideIndexes: [], staleEntries: [] });
    expect(await repairIndexes(path, TABLE)).toMatchObject({ missing: 0, stale: 0, orphaned: 0 });
  });

  it('deletes the entries of a reservation whose item was never written', async () => {
    const path = await ledgerWith([record('a', 'succeeded', 0, 't1')]);
    await crashBetween(path, {}, record('n', 'pending', 100, 't1'), 'after-puts');
    expect((await audit(path)).staleEntries).toEqual(['n', 'n']);
    expect(await repairIndexes(path, TABLE)).toMatchObject({ records: 1, unresolved: 0, orphaned: 2 });
    expect(await audit(path)).toMatchObject({ outsideIndexes: [], staleEntries: [] });
  });

  it('leaves a folder without the table alone', async () => {
    const path = await folder();
    expect(await repairIndexes(path, TABLE)).toMatchObject({ records: 0, missing: 0, orphaned: 0 });
  });
});
