import { mkdir } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { ensureLedgerTable } from '../ledger/table';
import type { DataFolderGuard } from './data-folder-guard';

/**
 * DynamoDB for local mode: dynalite in-process, on 127.0.0.1, persisted in a LevelDB folder so that a
 * restart (also after `kill -9`: every write has reached the OS before DynamoDB answers) loses no
 * ledger record. With a guard, every request is refused once the data folder is gone (fail closed).
 */

/**
 * The error a refused request gets, in DynamoDB's JSON error shape. A 400 with a type no SDK retries:
 * the store gives up at once and reports `ledger_unavailable`, instead of retrying a folder that is gone.
 */
export const LEDGER_UNAVAILABLE_TYPE = 'com.amazonaws.dynamodb.v20120810#LocalLedgerUnavailableException';

/** A running local DynamoDB. */
export interface LocalDynamo {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Closes the server and every connection to it. */
  stop(): Promise<void>;
}

/**
 * Starts dynalite on `127.0.0.1:port` (0: a free port) with its data in `path`, and makes sure the
 * ledger table exists.
 *
 * @example
 * ```ts
 * const dynamo = await startLocalDynamo({ path: '.data/ledger', port: 0, tableName: 'tool-ledger' });
 * console.log(dynamo.endpoint);
 * ```
 */
export async function startLocalDynamo(options: {
  path: string;
  port: number;
  tableName: string;
  /** Asked before every request; a problem refuses it. */
  guard?: DataFolderGuard;
}): Promise<LocalDynamo> {
  await mkdir(options.path, { recursive: true });
  const server: Server = dynalite({
    path: options.path,
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  if (options.guard) guardRequests(server, options.guard);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const stop = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await ensureLedgerTable(client, options.tableName);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, stop };
}

/** Puts the guard in front of dynalite's request handler. */
function guardRequests(server: Server, guard: DataFolderGuard): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const problem = guard.check();
    if (problem === undefined) {
      for (const handler of handlers) handler.call(server, req, res);
      return;
    }
    req.resume();
    const body = JSON.stringify({
      __type: LEDGER_UNAVAILABLE_TYPE,
      message: `the local ledger refuses requests: ${problem}`,
    });
    res.writeHead(400, {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': crypto.randomUUID(),
    });
    res.end(body);
  });
}
