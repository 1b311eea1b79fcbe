import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import { reconcileApplied } from '../../functions/engine/transitions';
import { type CliHarness, serveCli } from '../cli/support';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/*
 * The record's history is stored one JSON text per entry (a list of strings), which is cheaper to
 * write than a map per entry; the engine, the API, the CLI and the console see the same entries as
 * before. Items whose history was written as maps (by an earlier version, through the document client)
 * read as they are and take new entries after them.
 */

const db = useDynalite();

/** The kind of each stored history element, straight from the table: `S` (text) or `M` (map). */
async function storedKinds(tableName: string, record: OperationRecord): Promise<string[]> {
  const raw = await db.client.send(
    new GetItemCommand({
      TableName: tableName,
      Key: { pk: { S: record.pk }, sk: { S: record.sk } },
      ConsistentRead: true,
    }),
  );
  return (raw.Item?.history?.L ?? []).map((entry) => Object.keys(entry).join());
}

/** Stores `record` as the earlier version did: the document client, a map per history entry. */
async function putAsEarlierVersion(tableName: string, record: OperationRecord): Promise<void> {
  const doc = DynamoDBDocumentClient.from(db.client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  await doc.send(new PutCommand({ TableName: tableName, Item: record }));
}

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

    await putAsEarlierVersion(ledger.store.tableName, read!);
    expect(await storedKinds(ledger.store.tableName, read!)).toEqual(['M', 'M']);
    const old = await ledger.store.get(key);
    expect(old?.history).toEqual(read?.history);

    const decided = await reconcileApplied(ledger.deps, ledger.req(), old!, tool.tool, {
      json: JSON.stringify({ ok: true }),
      code: 'succeeded',
    });
    expect(decided.ok).toBe(true);
    expect(await storedKinds(ledger.store.tableName, read!)).toEqual(['M', 'M', 'S']);
    const after = await ledger.store.get(key);
    expect(after?.history?.map((h) => [h.from, h.to])).toEqual([
      [null, 'pending'],
      ['pending', 'uncertain'],
      ['uncertain', 'succeeded'],
    ]);
    expect(decided.ok && decided.record.history).toEqual(after?.history);
  });
});

describe('a history written as maps, as users see it', () => {
  let cli: CliHarness | undefined;
  afterEach(async () => {
    await cli?.close();
    cli = undefined;
  });

  /** `GET /v1/operations/{id}?include=history` as an operator of tenant acme. */
  async function getWithHistory(endpoint: string, id: string): Promise<Record<string, unknown>> {
    const response = await fetch(`${endpoint}/v1/operations/${encodeURIComponent(id)}?include=history`, {
      headers: { authorization: 'Bearer operator-a' },
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  }

  it('GET ?include=history and the CLI show the same operation whichever form its history is stored in', async () => {
    const tool = new ScriptedTool('test.effect');
    cli = await serveCli(db, [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    await cli.ledger.submit({ operationId: 'old-1', arguments: { target: 'a' } });
    const record = (await cli.ledger.store.get(operationKey('acme', 'old-1')))!;
    const tableName = cli.ledger.store.tableName;
    expect(await storedKinds(tableName, record)).toEqual(['S', 'S']);
    const asText = await getWithHistory(cli.endpoint, 'old-1');
    const shownAsText = await cli.run(['show', 'old-1', '--history']);
    const jsonAsText = await cli.run(['show', 'old-1', '--json', '--history']);

    await putAsEarlierVersion(tableName, record);
    expect(await storedKinds(tableName, record)).toEqual(['M', 'M']);
    const asMaps = await getWithHistory(cli.endpoint, 'old-1');
    expect(asMaps).toEqual(asText);
    expect((asMaps.history as { from: string | null; to: string }[]).map((h) => [h.from, h.to])).toEqual([
      [null, 'pending'],
      ['pending', 'uncertain'],
    ]);
    const shown = await cli.run(['show', 'old-1', '--history']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/pending -> uncertain\s+1\s+\S+\s+reset_after_send/);
    expect(shown).toEqual(shownAsText);
    expect(await cli.run(['show', 'old-1', '--json', '--history'])).toEqual(jsonAsText);

    // An operator's resolution appends a text entry after the two maps; all three read in order.
    expect((await cli.run(['resolve', 'old-1', 'applied', '--yes'])).code).toBe(0);
    expect(await storedKinds(tableName, record)).toEqual(['M', 'M', 'S']);
    const resolved = await getWithHistory(cli.endpoint, 'old-1');
    expect(
      (resolved.history as { from: string | null; to: string; code?: string }[]).map((h) => [
        h.from,
        h.to,
        h.code,
      ]),
    ).toEqual([
      [null, 'pending', undefined],
      ['pending', 'uncertain', 'reset_after_send'],
      ['uncertain', 'succeeded', 'resolved_applied'],
    ]);
    const after = await cli.run(['show', 'old-1', '--history']);
    expect(after.stdout).toMatch(/uncertain -> succeeded\s+1\s+\S+\s+resolved_applied/);
  });
});
