import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToken, ToolLedgerClient } from '../../client/index';
import { operationKey } from '../../functions/contract/keys';
import { toAttributes } from '../../functions/ledger/record-item';
import { localS3Client } from '../../functions/local/sqs-server';
import { RESULTS_BUCKET_NAME } from '../../functions/local/stack';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { body, callWithId, mcpClient } from '../mcp/support';

/**
 * Whole results in local mode, end to end: `npm start` as a child process with a tool that returns a
 * megabyte of random base64. Its result is kept in the S3 emulator on the data folder, and HTTP, MCP
 * and the client replay it byte for byte; an object deleted or altered behind the ledger's back answers
 * `result_unavailable`; the objects survive a crash of local mode.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOOLS = path.join(ROOT, 'test', 'fixtures', 'large-result-tools.ts');
const MB = 1_000_000;

let dataDir: string;
let stack: LocalStackProcess;
let mcp: Client;

async function start(): Promise<void> {
  stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_TOOLS_MODULE: TOOLS } });
  mcp = await mcpClient(`${stack.api}/mcp`, stack.tokens.agent);
}

async function stop(): Promise<void> {
  await mcp?.close();
  await stack?.kill();
}

/** An answer's body: an operation or a problem. */
interface Answer {
  state?: string;
  code?: string;
  result?: unknown;
}

/** A request to the API; the body as text (what travelled) and parsed. */
async function api(method: 'GET' | 'POST', route: string, key?: string, json?: unknown) {
  const response = await fetch(`${stack.api}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${stack.tokens.agent}`,
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: JSON.parse(text) as Answer,
  };
}

const submit = (key: string, name: string, bytes = MB) =>
  api('POST', '/v1/operations', key, { tool: 'fixture.blob', arguments: { name, bytes } });
const read = (key: string) => api('GET', `/v1/operations/${encodeURIComponent(key)}`);

/** What the effect itself returned, as it wrote it. */
const written = (name: string) => readFile(path.join(dataDir, 'workspace', 'blobs', `${name}.json`), 'utf8');

async function storedRef(key: string): Promise<{ key: string; size: number; sha256: string }> {
  const dynamo = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const out = await dynamo.send(
      new GetItemCommand({
        TableName: stack.table,
        Key: toAttributes(operationKey('local', key)),
        ConsistentRead: true,
      }),
    );
    expect(out.Item?.result).toBeUndefined();
    return JSON.parse(out.Item?.result_ref?.S ?? 'null');
  } finally {
    dynamo.destroy();
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'tl-whole-results-'));
  await start();
}, 90_000);

afterAll(async () => {
  await stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('whole results in local mode', () => {
  it('a 1 MB result is replayed byte for byte through HTTP, MCP and the client', async () => {
    const key = `blob-1-${Date.now()}`;
    const t0 = performance.now();
    const first = await submit(key, 'one');
    const firstMs = performance.now() - t0;
    expect(first.status).toBe(201);
    expect(first.body.state).toBe('succeeded');
    const original = await written('one');
    expect(Buffer.byteLength(original)).toBeGreaterThan(MB);
    expect(JSON.stringify(first.body.result)).toBe(original);
    const ref = await storedRef(key);
    expect(ref).toMatchObject({ at: 'object', size: Buffer.byteLength(original) });

    const t1 = performance.now();
    const again = await submit(key, 'one');
    const replayMs = performance.now() - t1;
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.stringify(again.body.result)).toBe(original);
    expect(JSON.stringify((await read(key)).body.result)).toBe(original);

    const viaMcp = await callWithId(mcp, 'fixture.blob', { name: 'one', bytes: MB }, key);
    expect(viaMcp.isError).toBeFalsy();
    expect(JSON.stringify(body(viaMcp).result)).toBe(original);
    expect(body(viaMcp).replayed).toBe(true);

    const client = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken(stack.tokens.agent) });
    const viaClient = await client.call({
      operationId: key,
      tool: 'fixture.blob',
      arguments: { name: 'one', bytes: MB },
    });
    expect(viaClient.replayed).toBe(true);
    expect(JSON.stringify(viaClient.operation.result)).toBe(original);
    // The effect ran once: its file was written once, and every answer is that file's text.
    expect(await written('one')).toBe(original);
    console.info(
      `whole results (local mode): ${Buffer.byteLength(original)} bytes; first call ${firstMs.toFixed(0)} ms, HTTP replay ${replayMs.toFixed(0)} ms`,
    );
  }, 60_000);

  it('ledger.run: a 1 MB result of an effect the caller runs is recorded whole and replayed byte for byte', async () => {
    const client = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken(stack.tokens.agent) });
    const value = { report: randomBytes(750_000).toString('base64') };
    let runs = 0;
    const input = {
      operationId: `caller-blob-${Date.now()}`,
      tool: 'agent.report',
      arguments: { week: 49 },
      execute: async () => {
        runs++;
        return value;
      },
    };
    const first = await client.run(input);
    expect(first).toMatchObject({ outcome: 'succeeded', replayed: false });
    expect(JSON.stringify(first.result)).toBe(JSON.stringify(value));
    const ref = await storedRef(input.operationId);
    expect(ref).toMatchObject({ at: 'object', size: Buffer.byteLength(JSON.stringify(value)) });
    const again = await client.run(input);
    expect(again).toMatchObject({ outcome: 'succeeded', replayed: true });
    expect(JSON.stringify(again.result)).toBe(JSON.stringify(value));
    expect(runs).toBe(1);
  });

  it('an object deleted or altered behind the ledger’s back answers result_unavailable, never another result', async () => {
    const s3 = localS3Client(stack.sqs);
    try {
      const altered = `blob-2-${Date.now()}`;
      expect((await submit(altered, 'two', 100_000)).status).toBe(201);
      const ref = await storedRef(altered);
      const stored = await s3.send(new GetObjectCommand({ Bucket: RESULTS_BUCKET_NAME, Key: ref.key }));
      const bytes = Buffer.from((await stored.Body?.transformToByteArray()) ?? []);
      bytes.writeUInt8(bytes.readUInt8(bytes.length >> 1) ^ 1, bytes.length >> 1);
      await s3.send(new PutObjectCommand({ Bucket: RESULTS_BUCKET_NAME, Key: ref.key, Body: bytes }));
      const answer = await read(altered);
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'result_unavailable' });
      expect(answer.text).not.toContain('"data"');
      const viaMcp = await callWithId(mcp, 'fixture.blob', { name: 'two', bytes: 100_000 }, altered);
      expect(viaMcp.isError).toBe(true);
      expect(JSON.stringify(viaMcp)).toContain('result_unavailable');

      const deleted = `blob-3-${Date.now()}`;
      expect((await submit(deleted, 'three', 100_000)).status).toBe(201);
      await s3.send(
        new DeleteObjectCommand({ Bucket: RESULTS_BUCKET_NAME, Key: (await storedRef(deleted)).key }),
      );
      const gone = await submit(deleted, 'three', 100_000);
      expect(gone.status).toBe(503);
      expect(gone.body).toMatchObject({ code: 'result_unavailable' });
      // Still succeeded, and the effect did not run again.
      expect(await written('three')).toBeDefined();
    } finally {
      s3.destroy();
    }
  }, 60_000);

  it('results survive a crash of local mode (kill -9) and are replayed whole after the restart', async () => {
    const key = `blob-4-${Date.now()}`;
    expect((await submit(key, 'four', 200_000)).status).toBe(201);
    const original = await written('four');
    await stop();
    await start();
    const after = await read(key);
    expect(after.status).toBe(200);
    expect(JSON.stringify(after.body.result)).toBe(original);
  }, 120_000);
});
