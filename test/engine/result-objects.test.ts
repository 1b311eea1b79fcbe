import { createHash, randomBytes } from 'node:crypto';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand as PutCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { resultObjectKey } from '../../functions/contract/payload-objects';
import { LedgerUnavailableError, ResultUnavailableError } from '../../functions/domain/errors';
import { type OperationRecord, toView } from '../../functions/domain/operation';
import { loadResult, placeResult } from '../../functions/engine/payloads';
import { reconcilePass } from '../../functions/engine/reconcile';
import { toAttributes, toItem } from '../../functions/ledger/record-item';
import { S3ObjectStore } from '../../functions/ledger/s3-object-store';
import { type LocalSqs, localS3Client, startLocalSqs } from '../../functions/local/sqs-server';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

/**
 * Whole results by reference: a result whose compressed form does not fit in its record goes to the
 * object store (fauxqs's S3, the emulator local mode runs) before the commit that names it, and every
 * read checks it by SHA-256 and size. A missing or altered object answers `result_unavailable`, never a
 * wrong result; a store that fails at commit leaves the operation succeeded with `result_not_stored`.
 */

const db = useDynalite();
const BUCKET = 'tool-ledger-results';
let s3: LocalSqs;
let client: S3Client;

beforeAll(async () => {
  s3 = await startLocalSqs(0);
  client = localS3Client(s3.endpoint);
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
});

afterAll(async () => {
  client?.destroy();
  await s3?.stop();
});

/** Incompressible JSON of about `bytes` bytes: random base64 inside a document. */
function noise(bytes: number): { kind: string; data: string } {
  return { kind: 'blob', data: randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64') };
}

async function ledgerWithObjects(result: unknown, objects = new S3ObjectStore(client, BUCKET)) {
  const tool = new ScriptedTool();
  tool.defaultBehaviour = { kind: 'succeed', result };
  const table = await freshTable(db.client);
  const ledger = testLedger(db.client, table, [tool.tool]);
  ledger.deps.objects = objects;
  return { tool, table, ledger };
}

async function rawItem(table: string, id: string) {
  const out = await db.client.send(
    new GetItemCommand({
      TableName: table,
      Key: toAttributes(operationKey('acme', id)),
      ConsistentRead: true,
    }),
  );
  return out.Item ?? {};
}

describe('whole results kept in the object store', () => {
  it('a 1 MB incompressible result is written to the store before its commit and replayed byte for byte', async () => {
    const result = noise(1_000_000);
    const json = JSON.stringify(result);
    const { tool, table, ledger } = await ledgerWithObjects(result);
    const started = performance.now();
    const first = await ledger.submit({ operationId: 'o-1', arguments: { target: 'x' } });
    const firstMs = performance.now() - started;
    expect(first.record.state).toBe('succeeded');
    const item = await rawItem(table, 'o-1');
    // The item holds only the reference: no result attribute, a few hundred bytes.
    expect(item.result).toBeUndefined();
    const ref = JSON.parse(item.result_ref?.S ?? '{}');
    expect(ref).toMatchObject({
      at: 'object',
      size: Buffer.byteLength(json),
      sha256: createHash('sha256').update(json).digest('hex'),
      encoding: 'br',
    });
    expect(ref.key).toBe(resultObjectKey(first.record as OperationRecord, ref.sha256));

    const cold = testLedger(db.client, table, [tool.tool]);
    cold.deps.objects = ledger.deps.objects;
    const replayStarted = performance.now();
    const replay = await cold.submit({ operationId: 'o-1', arguments: { target: 'x' } });
    const loaded = await loadResult(cold.deps, replay.record);
    const replayMs = performance.now() - replayStarted;
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(loaded.result).toBe(json);
    expect(toView(loaded).result).toEqual(result);
    expect(tool.effects).toHaveLength(1);
    console.info(
      `1 MB result: first execution ${firstMs.toFixed(0)} ms, cold replay ${replayMs.toFixed(0)} ms`,
    );
  });

  it('an object deleted behind the ledger’s back answers result_unavailable, never another result', async () => {
    const { table, ledger } = await ledgerWithObjects(noise(100_000));
    await ledger.submit({ operationId: 'o-2', arguments: { target: 'x' } });
    const ref = JSON.parse((await rawItem(table, 'o-2')).result_ref?.S ?? '{}');
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: ref.key }));
    const replay = await ledger.submit({ operationId: 'o-2', arguments: { target: 'x' } });
    expect(replay.record.state).toBe('succeeded');
    const error = await loadResult(ledger.deps, replay.record).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResultUnavailableError);
    expect((error as ResultUnavailableError).code).toBe('result_unavailable');
    expect(() => toView(replay.record)).toThrow(/not loaded/);
  });

  it('an object altered behind the ledger’s back (same size, other bytes) answers result_unavailable', async () => {
    const { table, ledger } = await ledgerWithObjects(noise(100_000));
    await ledger.submit({ operationId: 'o-3', arguments: { target: 'x' } });
    const ref = JSON.parse((await rawItem(table, 'o-3')).result_ref?.S ?? '{}');
    const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: ref.key }));
    const bytes = Buffer.from(await (out.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())));
    bytes[100] = bytes[100] === 0x41 ? 0x42 : 0x41;
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: ref.key, Body: bytes }));
    const replay = await ledger.submit({ operationId: 'o-3', arguments: { target: 'x' } });
    await expect(loadResult(ledger.deps, replay.record)).rejects.toMatchObject({
      code: 'result_unavailable',
      message: expect.stringMatching(/SHA-256|decode/),
    });
    // Cut short: the check on size (and brotli's bound) refuses it too.
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: ref.key, Body: bytes.subarray(0, 10) }));
    await expect(loadResult(ledger.deps, replay.record)).rejects.toBeInstanceOf(ResultUnavailableError);
  });

  it('a store that fails during the commit leaves the operation succeeded with result_not_stored, never failed or uncertain', async () => {
    const result = noise(200_000);
    const json = JSON.stringify(result);
    const broken = localS3Client(s3.endpoint);
    const mock = mockClient(broken);
    mock
      .on(PutCommand)
      .rejects(Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable' }));
    try {
      const { tool, ledger } = await ledgerWithObjects(result, new S3ObjectStore(broken, BUCKET));
      const first = await ledger.submit({ operationId: 'o-4', arguments: { target: 'x' } });
      expect(first.record.state).toBe('succeeded');
      expect(first.record.outcome_code).toBe('succeeded');
      const view = toView(await loadResult(ledger.deps, first.record));
      expect(view.result).toBeNull();
      expect(view.result_unavailable).toEqual({
        code: 'result_not_stored',
        size: Buffer.byteLength(json),
        sha256: createHash('sha256').update(json).digest('hex'),
      });
      const replay = await ledger.submit({ operationId: 'o-4', arguments: { target: 'x' } });
      expect(replay).toMatchObject({ kind: 'completed', replayed: true });
      expect(toView(replay.record).result_unavailable?.code).toBe('result_not_stored');
      expect(tool.effects).toHaveLength(1);
      expect(mock.commandCalls(PutCommand).length).toBeGreaterThan(0);
    } finally {
      mock.restore();
      broken.destroy();
    }
  });

  it('an orphan (an object written by an attempt whose commit never landed) never replaces the committed result', async () => {
    const committed = noise(80_000);
    const { table, ledger } = await ledgerWithObjects(committed);
    await ledger.submit({ operationId: 'o-5', arguments: { target: 'x' } });
    const record = (await ledger.store.get(operationKey('acme', 'o-5')))!;
    // A writer of the same attempt with another result (an executor whose commit never landed) and a
    // writer of a later attempt: each object has its own key, and no record names them.
    const orphanSame = await placeResult(ledger.deps, record, JSON.stringify(noise(80_000)));
    const orphanLater = await placeResult(
      ledger.deps,
      { ...record, attempt: 2 },
      JSON.stringify(noise(80_000)),
    );
    const ref = JSON.parse((await rawItem(table, 'o-5')).result_ref?.S ?? '{}');
    expect(orphanSame.result_ref?.key).not.toBe(ref.key);
    expect(orphanLater.result_ref?.key).not.toBe(ref.key);
    const listed = await client.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: ref.key.slice(0, ref.key.lastIndexOf('/') + 1) }),
    );
    expect(listed.Contents?.map((o) => o.Key).sort()).toEqual(
      [ref.key, orphanSame.result_ref?.key, orphanLater.result_ref?.key].sort(),
    );
    const replay = await ledger.submit({ operationId: 'o-5', arguments: { target: 'x' } });
    expect((await loadResult(ledger.deps, replay.record)).result).toBe(JSON.stringify(committed));
  });

  it('a crash between the object write and the commit leaves an orphan that the next attempt’s result never meets', async () => {
    const lost = noise(80_000);
    const kept = noise(80_000);
    const { tool, table, ledger } = await ledgerWithObjects(lost);
    tool.next({ kind: 'succeed', result: lost }, { kind: 'succeed', result: kept });
    tool.reconcileVerdict = 'not_applied';
    // The attempt's commit never lands (the process dies after writing the object).
    const transition = ledger.store.transition.bind(ledger.store);
    ledger.store.transition = async (record, write) => {
      if (write.transition === 'record_outcome') throw new LedgerUnavailableError('the process died');
      return transition(record, write);
    };
    await ledger.submit({ operationId: 'o-9', arguments: { target: 'x' } }).catch(() => undefined);
    ledger.store.transition = transition;
    const crashed = (await ledger.store.get(operationKey('acme', 'o-9')))!;
    expect(crashed.state).toBe('pending');
    const prefix = resultObjectKey(crashed, 'x').replace(/\/[^/]*$/, '/');
    const orphans = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    expect(orphans.Contents).toHaveLength(1);

    // The lease runs out; the reconciler finds the attempt did not apply; the next attempt runs.
    for (let pass = 0; pass < 4; pass++) {
      const record = (await ledger.store.get(operationKey('acme', 'o-9')))!;
      if (record.state === 'failed_retryable') break;
      ledger.advance(
        Math.max((record.attention_at ?? record.lease_expires_at ?? 0) - ledger.deps.clock() + 1, 1),
      );
      await reconcilePass(ledger.deps, ledger.req());
    }
    const second = await ledger.submit({ operationId: 'o-9', arguments: { target: 'x' } });
    expect(second.record).toMatchObject({ state: 'succeeded', attempt: 2 });
    const ref = JSON.parse((await rawItem(table, 'o-9')).result_ref?.S ?? '{}');
    const all = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    expect(all.Contents?.map((o) => o.Key)).toContain(ref.key);
    expect(all.Contents).toHaveLength(2);
    const replay = await ledger.submit({ operationId: 'o-9', arguments: { target: 'x' } });
    expect((await loadResult(ledger.deps, replay.record)).result).toBe(JSON.stringify(kept));
  });

  it('results that fit in the item stay there, and without an object store a large one keeps the truncated form', async () => {
    const small = { ok: true };
    const { table, ledger } = await ledgerWithObjects(small);
    await ledger.submit({ operationId: 'o-6', arguments: { target: 'x' } });
    expect((await rawItem(table, 'o-6')).result?.S).toBe(JSON.stringify(small));

    const big = noise(60_000);
    const tool = new ScriptedTool();
    tool.defaultBehaviour = { kind: 'succeed', result: big };
    const plain = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const out = await plain.submit({ operationId: 'o-7', arguments: { target: 'x' } });
    const json = JSON.stringify(big);
    expect(JSON.parse(out.record.result ?? 'null')).toEqual({
      truncated: true,
      size: Buffer.byteLength(json),
      sha256: createHash('sha256').update(json).digest('hex'),
    });
  });

  it('an item written before whole results, with a truncated result, still reads and replays as it was', async () => {
    const { table, ledger } = await ledgerWithObjects({ ok: true });
    await ledger.submit({ operationId: 'o-8', arguments: { target: 'x' } });
    const record = (await ledger.store.get(operationKey('acme', 'o-8')))!;
    const truncated = JSON.stringify({ truncated: true, size: 40_000, sha256: 'a'.repeat(64) });
    const old = { ...record, record_format: 1, result: truncated, arguments: '{"target":"x"}' };
    await db.client.send(new PutItemCommand({ TableName: table, Item: toItem(old, false) }));
    const cold = testLedger(db.client, table, []);
    cold.deps.objects = ledger.deps.objects;
    const got = (await cold.store.get(operationKey('acme', 'o-8')))!;
    expect(toView(await loadResult(cold.deps, got)).result).toEqual(JSON.parse(truncated));
  });
});
