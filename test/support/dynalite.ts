import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { ensureLedgerTable } from '../../functions/ledger/table';

/** A dynalite server started in-process by a test, with a client pointed at it. */
export interface DynaliteHandle {
  endpoint: string;
  client: DynamoDBClient;
  /** Makes another client for the same server (e.g. with fault-injecting middleware). */
  newClient(options?: { maxAttempts?: number }): DynamoDBClient;
  stop(): Promise<void>;
}

/** Starts dynalite on a free loopback port (in memory unless `path` is given). */
export async function startDynalite(path?: string): Promise<DynaliteHandle> {
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(path ? { path } : {}),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const newClient = (options: { maxAttempts?: number } = {}) =>
    new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: options.maxAttempts ?? 3,
    });
  const client = newClient();
  return {
    endpoint,
    client,
    newClient,
    async stop() {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let tableCounter = 0;

/** A fresh table name per test, so tests share one server without seeing each other. */
export async function freshTable(client: DynamoDBClient): Promise<string> {
  tableCounter += 1;
  const name = `ledger-${process.pid}-${tableCounter}`;
  await ensureLedgerTable(client, name);
  return name;
}
