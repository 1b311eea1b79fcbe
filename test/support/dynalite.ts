import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { afterAll, beforeAll } from 'vitest';
import { ensureLedgerTable } from '../../functions/ledger/table';

/** A dynalite server started in-process by a test, with a client pointed at it. */
export interface DynaliteHandle {
  endpoint: string;
  client: DynamoDBClient;
  /** Makes another client for the same server (e.g. with fault-injecting middleware). */
  newClient(options?: { maxAttempts?: number }): DynamoDBClient;
  stop(): Promise<void>;
}

/** A DynamoDB client for a dynalite at `endpoint` (dynalite takes any credentials). */
export function clientFor(endpoint: string, options: { maxAttempts?: number } = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: options.maxAttempts ?? 3,
  });
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
  const newClient = (options: { maxAttempts?: number } = {}) => clientFor(endpoint, options);
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

/**
 * One in-memory dynalite for the test file that calls it: started before its first test, stopped after
 * its last. The handle is usable from inside the tests (and `beforeAll`/`beforeEach` hooks registered
 * after this call), where its fields are those of the running server.
 *
 * @example
 * ```ts
 * const db = useDynalite();
 * beforeEach(async () => { table = await freshTable(db.client); });
 * ```
 */
export function useDynalite(): DynaliteHandle {
  let running: DynaliteHandle | undefined;
  const current = (): DynaliteHandle => {
    if (!running) throw new Error('useDynalite: the server is used before its beforeAll has run');
    return running;
  };
  beforeAll(async () => {
    running = await startDynalite();
  });
  afterAll(async () => {
    await running?.stop();
    running = undefined;
  });
  return {
    get endpoint() {
      return current().endpoint;
    },
    get client() {
      return current().client;
    },
    newClient: (options) => current().newClient(options),
    stop: () => current().stop(),
  };
}
