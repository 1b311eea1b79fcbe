import { SQSClient } from '@aws-sdk/client-sqs';
import type { ToolLedgerClient } from '@tool-ledger/client';
import { sqsEventQueue } from '@tool-ledger/client/sqs';

// Local mode: the events queue `tool-ledger-events` on the `sqs=` endpoint of the ready line. On AWS:
// the URL of a queue that a rule on the ledger's bus targets, and `new SQSClient({})`.
const events = sqsEventQueue({ queueUrl: eventsQueueUrl, sqs: new SQSClient({ endpoint: sqsEndpoint }) });
await client.call({ operationId, tool: 'webhook.post', arguments: { url, json }, async: true });
const done = await client.waitForEvent(operationId, { events, timeoutMs: 60_000 });
console.log(done.state, done.result);
// #endregion docs

declare const client: ToolLedgerClient;
declare const eventsQueueUrl: string;
declare const sqsEndpoint: string;
declare const operationId: string;
declare const url: string;
declare const json: Record<string, unknown>;
