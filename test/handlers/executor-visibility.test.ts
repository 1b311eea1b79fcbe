import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invocationContext } from '../../functions/local/lambda-context';
import { createWorkQueues, type LocalSqs, startLocalSqs } from '../../functions/local/sqs-server';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { createExecutorHandler, retryVisibilitySeconds } from '../../functions/queue/executor-handler';
import { buildRuntime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * A message reported failed comes back after seconds, not after the queue's visibility timeout (six
 * executor timeouts, 12 minutes by default), on a real queue (fauxqs). The queue here hides a
 * received message for an hour; the handler is told to make failures visible again at once, so
 * receiving the message again proves the change reached the queue.
 */

const db = useDynalite();
let sqs: LocalSqs;
beforeAll(async () => {
  sqs = await startLocalSqs(0);
});
afterAll(async () => {
  await sqs?.stop();
});

describe('visibility per failure', () => {
  it('a retryable failure is visible again after the per-failure wait, not the queue’s timeout', async () => {
    const flaky = new ScriptedTool('test.flaky');
    flaky.defaultBehaviour = { kind: 'not_applied', code: 'connect_refused' };
    const queues = await createWorkQueues(sqs.client, {
      name: `visibility-${process.pid}`,
      visibilityTimeoutSeconds: 3_600,
      maxReceiveCount: 5,
    });
    const runtime = buildRuntime(() => [flaky.tool], {
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
      TOOL_LEDGER_SQS_ENDPOINT: sqs.endpoint,
      TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
      TOOL_LEDGER_QUEUE_URL: queues.queueUrl,
      TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
    });
    runtime.deps.metrics = new MemoryLedgerMetrics();
    runtime.deps.log = () => {};
    const waits: number[] = [];
    const handler = createExecutorHandler(() => runtime, {
      retryVisibility: (receives) => {
        waits.push(retryVisibilitySeconds(receives));
        return 0;
      },
    });
    await sqs.client.send(
      new SendMessageCommand({
        QueueUrl: queues.queueUrl,
        MessageBody: JSON.stringify({
          operation_id: 'f-1',
          tenant: 'acme',
          tool: 'test.flaky',
          arguments: { target: 't' },
        }),
      }),
    );
    const receive = async () => {
      const out = await sqs.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queues.queueUrl,
          WaitTimeSeconds: 5,
          MessageSystemAttributeNames: ['All'],
        }),
      );
      expect(out.Messages).toHaveLength(1);
      const m = out.Messages![0]!;
      const record: SQSRecord = {
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        body: m.Body!,
        attributes: {
          ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
          SentTimestamp: m.Attributes?.SentTimestamp ?? '0',
          SenderId: m.Attributes?.SenderId ?? '000000000000',
          ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? '0',
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: queues.queueArn,
        awsRegion: 'us-east-1',
      };
      return record;
    };
    const context = invocationContext({ name: 'executor', timeoutMs: 120_000 });
    const first = await receive();
    expect((await handler({ Records: [first] }, context)).batchItemFailures).toEqual([
      { itemIdentifier: first.messageId },
    ]);
    // Back at once (with the hour-long queue timeout it would not be), and failed again: second attempt.
    const second = await receive();
    expect(second.messageId).toBe(first.messageId);
    expect(second.attributes.ApproximateReceiveCount).toBe('2');
    await handler({ Records: [second] }, context);
    expect(flaky.starts.map((s) => s.attempt)).toEqual([1, 2]);
    // What production would have waited: 10 s, then 20 s.
    expect(waits).toEqual([10, 20]);
  });

  it('waits 10 s, doubling per receive, at most 5 minutes', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map(retryVisibilitySeconds)).toEqual([10, 20, 40, 80, 160, 300, 300]);
  });
});
