import { ToolLedgerQueueSender } from '@tool-ledger/client/sqs';

const sender = new ToolLedgerQueueSender({ queueUrl, tenant: 'acme', maxAgeMs: 86_400_000 }); // default: 18 days; false: none
await sender.send({ operationId, tool: 'webhook.post', arguments: { url, json }, agentRunId });
// #endregion docs

declare const queueUrl: string;
declare const operationId: string;
declare const url: string;
declare const json: Record<string, unknown>;
declare const agentRunId: string;
