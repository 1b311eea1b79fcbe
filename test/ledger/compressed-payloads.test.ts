import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { toAttributes, toItem } from '../../functions/ledger/record-item';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * Arguments and results are kept brotli-compressed in the item when that makes it smaller, and every
 * reader sees the same JSON. Items written before (plain text, results cut to `{truncated, …}`) read
 * as they always did.
 */

const db = useDynalite();

/** A real JSON document of about `chars` characters: package-lock.json entries. */
function lockDocument(chars: number): Record<string, unknown> {
  const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(lock.packages)) {
    out[name] = value;
    if (JSON.stringify(out).length > chars) break;
  }
  return out;
}

/** A real file of about 20 KiB: this repository's own source. */
const SOURCE = readFileSync(new URL('../../functions/ledger/ledger-store.ts', import.meta.url), 'utf8');

async function rawItem(table: string, id: string) {
  const key = operationKey('acme', id);
  const out = await db.client.send(
    new GetItemCommand({ TableName: table, Key: toAttributes(key), ConsistentRead: true }),
  );
  return out.Item ?? {};
}

describe('payloads compressed at rest', () => {
  it('large arguments and a large result are stored compressed and replayed as the same JSON', async () => {
    const tool = new ScriptedTool();
    const result = { path: 'functions/ledger/ledger-store.ts', content: SOURCE };
    tool.defaultBehaviour = { kind: 'succeed', result };
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    const args = { target: 'repo', value: { path: 'ledger-store.ts', content: SOURCE } };
    const first = await ledger.submit({ operationId: 'c-1', arguments: args });
    expect(first.record.state).toBe('succeeded');

    const item = await rawItem(table, 'c-1');
    const argumentsText = canonicalize({ target: 'repo', value: args.value }) ?? '';
    expect(item.arguments?.B).toBeInstanceOf(Uint8Array);
    expect(item.arguments?.B?.length).toBeLessThan(Buffer.byteLength(argumentsText) / 2);
    expect(item.result?.B).toBeInstanceOf(Uint8Array);
    expect(item.result?.B?.length).toBeLessThan(Buffer.byteLength(JSON.stringify(result)) / 2);

    // Another process, with no warm cache, reads the same arguments and replays the same result.
    const cold = testLedger(db.client, table, [tool.tool]);
    expect((await cold.store.get(operationKey('acme', 'c-1')))?.arguments).toBe(argumentsText);
    const replay = await cold.submit({ operationId: 'c-1', arguments: args });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(replay.record.result).toBe(JSON.stringify(result));
    expect(tool.effects).toHaveLength(1);
  });

  it('short payloads stay text: compressing them would not make the item smaller', async () => {
    const tool = new ScriptedTool();
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    await ledger.submit({ operationId: 'c-2', arguments: { target: 'x' } });
    const item = await rawItem(table, 'c-2');
    expect(item.arguments?.S).toBe('{"target":"x"}');
    expect(item.result?.S).toBeDefined();
  });

  it('an item written before compression, with a result cut to {truncated}, still reads and replays', async () => {
    const tool = new ScriptedTool();
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    await ledger.submit({ operationId: 'c-3', arguments: { target: 'x' } });
    const record = (await ledger.store.get(operationKey('acme', 'c-3')))!;
    const truncated = JSON.stringify({ truncated: true, size: 40_000, sha256: 'a'.repeat(64) });
    const old = { ...record, record_format: 1, result: truncated, arguments: '{"target":"x"}' };
    await db.client.send(new PutItemCommand({ TableName: table, Item: toItem(old, false) }));
    expect((await rawItem(table, 'c-3')).result?.S).toBe(truncated);

    const cold = testLedger(db.client, table, [tool.tool]);
    const replay = await cold.submit({ operationId: 'c-3', arguments: { target: 'x' } });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(JSON.parse(replay.record.result ?? 'null')).toEqual({
      truncated: true,
      size: 40_000,
      sha256: 'a'.repeat(64),
    });
    expect(tool.effects).toHaveLength(1);
  });

  it('a result far over 32 KiB whose compressed form fits in the item is replayed whole, byte for byte', async () => {
    const tool = new ScriptedTool();
    const result = { packages: lockDocument(90_000) };
    const json = JSON.stringify(result);
    expect(Buffer.byteLength(json)).toBeGreaterThan(2 * 32 * 1024);
    tool.defaultBehaviour = { kind: 'succeed', result };
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    await ledger.submit({ operationId: 'c-4', arguments: { target: 'x' } });
    const item = await rawItem(table, 'c-4');
    expect(item.result?.B?.length).toBeLessThanOrEqual(32 * 1024);

    const cold = testLedger(db.client, table, [tool.tool]);
    const replay = await cold.submit({ operationId: 'c-4', arguments: { target: 'x' } });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(replay.record.result).toBe(json);
    expect(tool.effects).toHaveLength(1);
  });

  it('a result whose compressed form does not fit is recorded by size and SHA-256, and the operation still succeeded', async () => {
    const tool = new ScriptedTool();
    const noise = randomBytes(60_000).toString('base64');
    tool.defaultBehaviour = { kind: 'succeed', result: { noise } };
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    const out = await ledger.submit({ operationId: 'c-5', arguments: { target: 'x' } });
    expect(out.record.state).toBe('succeeded');
    const json = JSON.stringify({ noise });
    expect(JSON.parse(out.record.result ?? 'null')).toEqual({
      truncated: true,
      size: Buffer.byteLength(json),
      sha256: createHash('sha256').update(json).digest('hex'),
    });
    expect(tool.effects).toHaveLength(1);
  });
});
