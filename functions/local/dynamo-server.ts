import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { ensureLedgerTable } from '../ledger/table';

/**
 * DynamoDB for local mode: dynalite in-process, on 127.0.0.1, persisted in a LevelDB folder so that a
 * restart (also after `kill -9`: every write has reached the OS before DynamoDB answers) loses no
 * ledger record.
 */

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
}): Promise<LocalDynamo> {
  await mkdir(options.path, { recursive: true });
  const server: Server = dynalite({
    path: options.path,
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
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
