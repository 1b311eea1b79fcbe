import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import type { LedgerStore } from '../../functions/ledger/ledger-store';
import { LEDGER_UNAVAILABLE_TYPE, startLocalDynamo } from '../../functions/local/dynamo-server';
import { InProcessDynamoHandler, inProcessDynamo } from '../../functions/local/in-process-dynamo';
import { buildRuntime, isLoopback } from '../../functions/wiring';
import { clientFor as dynaliteClient } from '../support/dynalite';
import { useTempFolders } from '../support/temp-folders';

/**
 * Local mode's DynamoDB runs dynalite on a thread of its own (functions/local/dynamo-thread.ts): it
 * serves and persists across a stop and a start, refuses every request once its data folder is gone,
 * reports a port it cannot take as a failed start, and ends its thread on stop. Local mode's handlers
 * send it a fixed, well-formed SigV4 header instead of computing a signature, over a MessagePort instead
 * of the loopback socket; anywhere else the SDK signs and sends over HTTP.
 */

const TABLE = 'tool-ledger';
const folder = useTempFolders('tool-ledger-dynamo-thread-');
const clientFor = (endpoint: string) => dynaliteClient(endpoint, { maxAttempts: 1 });

const KEY = { pk: { S: 'local#thread-1' }, sk: { S: 'op' } };

/** The error a request ends with, or undefined when it succeeds. */
function refusal(sent: Promise<unknown>): Promise<{ name: string; message: string } | undefined> {
  return sent.then(
    () => undefined,
    (error: unknown) => error as { name: string; message: string },
  );
}

describe('the local DynamoDB thread', () => {
  it('serves the ledger table, keeps what was written across a stop and a start, and frees its port on stop', async () => {
    const path = await folder();
    const first = await startLocalDynamo({ path, port: 0, tableName: TABLE });
    const client = clientFor(first.endpoint);
    await client.send(new PutItemCommand({ TableName: TABLE, Item: { ...KEY, state: { S: 'succeeded' } } }));
    client.destroy();
    await first.stop();
    await expect(
      clientFor(first.endpoint).send(new GetItemCommand({ TableName: TABLE, Key: KEY })),
    ).rejects.toThrow(/ECONNREFUSED/);

    const second = await startLocalDynamo({ path, port: 0, tableName: TABLE });
    const again = clientFor(second.endpoint);
    const read = await again.send(new GetItemCommand({ TableName: TABLE, Key: KEY, ConsistentRead: true }));
    again.destroy();
    await second.stop();
    expect(read.Item?.state).toEqual({ S: 'succeeded' });
  });

  it('refuses every request with the ledger-unavailable error once a guarded folder is gone', async () => {
    const data = await folder();
    const path = join(data, 'ledger');
    const dynamo = await startLocalDynamo({ path, port: 0, tableName: TABLE, guardFolders: [data, path] });
    const client = clientFor(dynamo.endpoint);
    try {
      await client.send(new PutItemCommand({ TableName: TABLE, Item: { ...KEY, state: { S: 'pending' } } }));
      await rm(data, { recursive: true, force: true });
      const refused = await refusal(client.send(new GetItemCommand({ TableName: TABLE, Key: KEY })));
      expect(refused?.name).toBe(LEDGER_UNAVAILABLE_TYPE.split('#')[1]);
      expect(refused?.message).toContain('data_folder_missing');
    } finally {
      client.destroy();
      await dynamo.stop();
    }
  });

  it('rejects the start, naming the cause, when its port is taken, and lets go of its folder', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const path = await folder();
      await expect(startLocalDynamo({ path, port, tableName: TABLE })).rejects.toThrow(
        /local DynamoDB could not start: .*EADDRINUSE/,
      );
      // LevelDB locks its folder while open: a second start on it succeeds only if the first let go.
      const next = await startLocalDynamo({ path, port: 0, tableName: TABLE });
      await next.stop();
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});

describe("local mode's signing of its DynamoDB requests", () => {
  /**
   * The Authorization header of the handlers' first DynamoDB request as signed; the request is stopped
   * there, so it never leaves the process.
   */
  async function authorizationSent(env: Record<string, string>): Promise<string | undefined> {
    const runtime = buildRuntime(() => [], { TOOL_LEDGER_TABLE_NAME: TABLE, ...env });
    const client = (runtime.deps.store as LedgerStore).client;
    let sent: string | undefined;
    client.middlewareStack.add(
      () => async (args) => {
        sent = (args.request as { headers: Record<string, string> }).headers.authorization;
        throw new Error('stopped before sending');
      },
      { step: 'deserialize', name: 'captureAuthorization' },
    );
    await expect(client.send(new GetItemCommand({ TableName: TABLE, Key: KEY }))).rejects.toThrow(
      'stopped before sending',
    );
    client.destroy();
    return sent;
  }

  it('sends a fixed, well-formed header to local mode’s own DynamoDB, which serves it', async () => {
    const dynamo = await startLocalDynamo({ path: await folder(), port: 0, tableName: TABLE });
    try {
      const env = { TOOL_LEDGER_LOCAL: 'true', TOOL_LEDGER_DYNAMODB_ENDPOINT: dynamo.endpoint };
      expect(await authorizationSent(env)).toBe(
        'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0',
      );
      const runtime = buildRuntime(() => [], { TOOL_LEDGER_TABLE_NAME: TABLE, ...env });
      const client = (runtime.deps.store as LedgerStore).client;
      const read = await client.send(new GetItemCommand({ TableName: TABLE, Key: KEY }));
      client.destroy();
      expect(read.$metadata.httpStatusCode).toBe(200);
    } finally {
      await dynamo.stop();
    }
  });

  it('signs as the SDK does without the local flag, and with it against an endpoint off this machine', async () => {
    const signature =
      /^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/us-east-1\/dynamodb\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/;
    const credentials = {
      AWS_ACCESS_KEY_ID: 'AKID',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_REGION: 'us-east-1',
    };
    for (const [name, value] of Object.entries(credentials)) vi.stubEnv(name, value);
    try {
      expect(await authorizationSent({ TOOL_LEDGER_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9' })).toMatch(
        signature,
      );
      expect(
        await authorizationSent({
          TOOL_LEDGER_LOCAL: 'true',
          TOOL_LEDGER_DYNAMODB_ENDPOINT: 'http://192.0.2.1:9',
        }),
      ).toMatch(/Signature=[0-9a-f]{64}$/);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('knows a loopback endpoint', () => {
    expect(['http://127.0.0.1:8000', 'http://localhost:1', 'http://[::1]:2'].map(isLoopback)).toEqual([
      true,
      true,
      true,
    ]);
    expect(
      ['http://192.0.2.1:9', 'https://dynamodb.us-east-1.amazonaws.com', 'not a url', undefined].map(
        isLoopback,
      ),
    ).toEqual([false, false, false, false]);
  });
});

describe("local mode's handlers reach their DynamoDB thread over a MessagePort", () => {
  const runtimeClient = (env: Record<string, string>) =>
    (buildRuntime(() => [], { TOOL_LEDGER_TABLE_NAME: TABLE, ...env }).deps.store as LedgerStore).client;

  it('with the local flag and the thread started in this process: the same store as over HTTP', async () => {
    const dynamo = await startLocalDynamo({ path: await folder(), port: 0, tableName: TABLE });
    const overHttp = clientFor(dynamo.endpoint);
    try {
      const local = runtimeClient({
        TOOL_LEDGER_LOCAL: 'true',
        TOOL_LEDGER_DYNAMODB_ENDPOINT: dynamo.endpoint,
      });
      expect(local.config.requestHandler).toBeInstanceOf(InProcessDynamoHandler);
      await local.send(new PutItemCommand({ TableName: TABLE, Item: { ...KEY, state: { S: 'pending' } } }));
      const read = await overHttp.send(
        new GetItemCommand({ TableName: TABLE, Key: KEY, ConsistentRead: true }),
      );
      expect(read.Item?.state).toEqual({ S: 'pending' });
      // A failed condition comes back as the same error over either way.
      const refused = (
        await refusal(
          local.send(
            new PutItemCommand({
              TableName: TABLE,
              Item: { ...KEY, state: { S: 'queued' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            }),
          ),
        )
      )?.name;
      expect(refused).toBe('ConditionalCheckFailedException');
      local.destroy();

      const withoutFlag = runtimeClient({ TOOL_LEDGER_DYNAMODB_ENDPOINT: dynamo.endpoint });
      expect(withoutFlag.config.requestHandler).not.toBeInstanceOf(InProcessDynamoHandler);
      withoutFlag.destroy();
    } finally {
      overHttp.destroy();
      await dynamo.stop();
    }
  });

  it('is guarded like HTTP: refused with the ledger-unavailable error once a guarded folder is gone', async () => {
    const data = await folder();
    const path = join(data, 'ledger');
    const dynamo = await startLocalDynamo({ path, port: 0, tableName: TABLE, guardFolders: [data, path] });
    const local = runtimeClient({
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: dynamo.endpoint,
    });
    try {
      expect(local.config.requestHandler).toBeInstanceOf(InProcessDynamoHandler);
      await rm(data, { recursive: true, force: true });
      const refused = await refusal(local.send(new GetItemCommand({ TableName: TABLE, Key: KEY })));
      expect(refused?.name).toBe(LEDGER_UNAVAILABLE_TYPE.split('#')[1]);
      expect(refused?.message).toContain('data_folder_missing');
    } finally {
      local.destroy();
      await dynamo.stop();
    }
  });

  it('fails a request at once after the thread stopped, and no longer offers the handler', async () => {
    const dynamo = await startLocalDynamo({ path: await folder(), port: 0, tableName: TABLE });
    const handler = inProcessDynamo(dynamo.endpoint);
    expect(handler).toBeInstanceOf(InProcessDynamoHandler);
    await dynamo.stop();
    expect(inProcessDynamo(dynamo.endpoint)).toBeUndefined();
    const client = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
      ...(handler ? { requestHandler: handler } : {}),
    });
    await expect(client.send(new GetItemCommand({ TableName: TABLE, Key: KEY }))).rejects.toThrow(
      /local DynamoDB thread (has )?stopped/,
    );
    client.destroy();
  });
});
