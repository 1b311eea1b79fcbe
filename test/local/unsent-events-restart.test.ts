import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { bearerToken, ToolLedgerClient } from '../../client/index';
import type { CompletionEvent } from '../../functions/contract/completion-event';
import { operationKey } from '../../functions/contract/keys';
import { completionEventOf } from '../../functions/events/completion-event';
import { fromItem, toAttributes } from '../../functions/ledger/record-item';
import { type RunningStack, startStack } from '../../functions/local/stack';
import { quietLocalSettings } from '../support/quiet-local-settings';

const local = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };

/** Receives (and deletes) until `count` events arrived: long polls, no clock. */
async function receive(stack: RunningStack, count: number): Promise<CompletionEvent[]> {
  const sqs = new SQSClient({ endpoint: stack.sqsEndpoint, ...local });
  try {
    const events: CompletionEvent[] = [];
    while (events.length < count) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: stack.eventsQueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 5,
        }),
      );
      for (const m of out.Messages ?? []) {
        events.push(JSON.parse(m.Body ?? '{}') as CompletionEvent);
        await sqs.send(
          new DeleteMessageCommand({ QueueUrl: stack.eventsQueueUrl, ReceiptHandle: m.ReceiptHandle }),
        );
      }
    }
    const rest = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.eventsQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    expect(rest.Messages ?? []).toEqual([]);
    return events;
  } finally {
    sqs.destroy();
  }
}

describe('local mode sends at its start the completion events its records still hold', () => {
  let dataDir: string | undefined;
  let stack: RunningStack | undefined;

  afterAll(async () => {
    await stack?.stop(0);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('an event left on its record by a crash before the send reaches the new events queue once, with its ID', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-unsent-'));
    const settings = quietLocalSettings(dataDir, 'agent-token=local:agent');
    stack = await startStack(settings);
    const client = new ToolLedgerClient({ endpoint: stack.apiUrl, signer: bearerToken('agent-token') });
    const { operation } = await client.call({
      operationId: 'op-restart',
      tool: 'workspace.append_line',
      arguments: { path: 'notes.txt', line: 'one' },
    });
    expect(operation.state).toBe('succeeded');
    const [sent] = await receive(stack, 1);

    // What a crash between the write and the send leaves: the event still on the record.
    const dynamo = new DynamoDBClient({ endpoint: stack.dynamoEndpoint, ...local });
    const key = toAttributes(operationKey('local', 'op-restart'));
    const item = await dynamo.send(
      new GetItemCommand({ TableName: stack.tableName, Key: key, ConsistentRead: true }),
    );
    const event = completionEventOf('pending', fromItem(item.Item ?? {}))!;
    expect(event.event_id).toBe(sent?.event_id);
    await dynamo.send(
      new UpdateItemCommand({
        TableName: stack.tableName,
        Key: key,
        UpdateExpression: 'SET unsent_events = :u',
        ExpressionAttributeValues: toAttributes({ ':u': { [event.event_id]: event } }),
      }),
    );
    dynamo.destroy();
    await stack.stop(0);
    stack = undefined;

    stack = await startStack(settings);
    const [again] = await receive(stack, 1);
    expect(again).toEqual(event);
  });
});
