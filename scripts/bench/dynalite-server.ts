import type { AddressInfo } from 'node:net';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';

/** An in-process dynalite server and a factory of clients pointed at it. */
export interface BenchDynalite {
  endpoint: string;
  /**
   * A new client, so that each side of the benchmark has its own middleware and counters. `settings`
   * are more client settings (tool-ledger's side is built with the handlers' own, functions/wiring.ts).
   */
  newClient(options?: { maxAttempts?: number; settings?: Partial<DynamoDBClientConfig> }): DynamoDBClient;
  stop(): Promise<void>;
}

/**
 * Starts dynalite in memory on a free loopback port. It runs in the benchmark's own process, so both
 * sides of every comparison pay for the same server on the same event loop.
 */
export async function startBenchDynalite(): Promise<BenchDynalite> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients: DynamoDBClient[] = [];
  return {
    endpoint,
    newClient(options = {}) {
      const client = new DynamoDBClient({
        ...options.settings,
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
        maxAttempts: options.maxAttempts ?? 3,
      });
      clients.push(client);
      return client;
    },
    async stop() {
      for (const client of clients) client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
