import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LEDGER_TABLE } from '../../functions/contract/table';
import { addTally, CallCounter, emptyTally } from './call-counter';
import { tapLine } from './tap-line';

/**
 * Counts local mode's own DynamoDB requests for the benchmark's `ledger.run` rows: preloaded into the
 * local-mode process (`startLocalStack({ preload })`), it puts the benchmark's {@link CallCounter} on
 * every DynamoDB client that process sends with (the handlers', the start-up check's), before its
 * first request, so local mode's requests are counted by the same middleware, below the SDK's retry
 * loop, as the other side's. It changes nothing else. The benchmark reads and resets the counts at
 * `GET /take` on the loopback address this module prints (tap-line.ts).
 */

const counters: CallCounter[] = [];
const tapped = new WeakSet<DynamoDBClient>();
const send = DynamoDBClient.prototype.send;
// Every client's `send` passes here first; the counter joins its middleware stack before the stack is
// first resolved (and cached, `cacheMiddleware`).
DynamoDBClient.prototype.send = function (this: DynamoDBClient, ...args: unknown[]) {
  if (!tapped.has(this)) {
    tapped.add(this);
    counters.push(new CallCounter(this, [LEDGER_TABLE.partitionKey.name, LEDGER_TABLE.sortKey.name]));
  }
  return (send as (...a: unknown[]) => unknown).apply(this, args);
} as typeof send;

const server = createServer((req, res) => {
  if (req.url !== '/take') {
    res.writeHead(404).end();
    return;
  }
  const total = emptyTally();
  for (const counter of counters) addTally(total, counter.take());
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(total));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
// Local mode's own stop ends the process; the tap must not keep it alive.
server.unref();
process.stdout.write(`${tapLine(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)}\n`);
