import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_AGE_MS, fifoIdFor, sendToQueue, ToolLedgerQueueSender } from '../../client/sqs-sender';
import { fakeClock } from './support/scripted-server';

let fauxqs: FauxqsServer;
let sqs: SQSClient;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  sqs = new SQSClient({
    endpoint: fauxqs.address,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  sqs?.destroy();
  await fauxqs?.stop();
});

async function receiveAll(queueUrl: string) {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

describe('ToolLedgerQueueSender', () => {
  it('sends the SPEC §6 message body to a standard queue', async () => {
    const { queueUrl } = fauxqs.createQueue('work-standard');
    const clock = fakeClock(Date.UTC(2025, 0, 2, 3, 4, 5));
    const sender = new ToolLedgerQueueSender({ queueUrl, tenant: 'acme', sqs, maxAgeMs: 86_400_000, clock });
    const sent = await sender.send({
      operationId: 'run-1:s0:c0',
      tool: 'workspace.append_line',
      arguments: { path: 'log.txt', line: 'hello' },
      agentRunId: 'run-1',
    });
    expect(sent.messageId).toBeTruthy();
    const [message] = await receiveAll(queueUrl);
    expect(JSON.parse(message!.Body!)).toEqual({
      operation_id: 'run-1:s0:c0',
      tenant: 'acme',
      tool: 'workspace.append_line',
      arguments: { path: 'log.txt', line: 'hello' },
      agent_run_id: 'run-1',
      not_after: '2025-01-03T03:04:05.000Z',
    });
    expect(message!.Attributes?.MessageGroupId).toBeUndefined();
  });

  it('derives FIFO group and deduplication IDs from the operation, so a duplicate send is dropped', async () => {
    const { queueUrl } = fauxqs.createQueue('work.fifo', { attributes: { FifoQueue: 'true' } });
    const longId = `run-${'x'.repeat(250)}`;
    const input = {
      operationId: longId,
      tool: 'webhook.post',
      arguments: { url: 'http://127.0.0.1/h', json: {} },
    };
    const first = await sendToQueue({ queueUrl, tenant: 'acme', sqs }, input);
    await sendToQueue({ queueUrl, tenant: 'acme', sqs }, input);
    await sendToQueue({ queueUrl, tenant: 'other', sqs }, input);

    const messages = await receiveAll(queueUrl);
    expect(messages.map((m) => JSON.parse(m.Body!).tenant).sort()).toEqual(['acme', 'other']);
    const acme = messages.find((m) => JSON.parse(m.Body!).tenant === 'acme')!;
    const dedup = acme.Attributes?.MessageDeduplicationId;
    expect(dedup).toBe(fifoIdFor('d', 'acme', longId));
    expect(first.messageDeduplicationId).toBe(dedup);
    expect(acme.Attributes?.MessageGroupId).toBe(fifoIdFor('g', 'acme', longId));
    for (const id of [dedup!, acme.Attributes!.MessageGroupId!]) {
      expect(id.length).toBeLessThanOrEqual(128);
      expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    // Without maxAgeMs a message still expires: 18 days, the longest the default queues keep one.
    const notAfter = Date.parse(JSON.parse(acme.Body!).not_after);
    expect(notAfter - Date.now()).toBeGreaterThan(DEFAULT_MAX_AGE_MS - 60_000);
    expect(notAfter - Date.now()).toBeLessThanOrEqual(DEFAULT_MAX_AGE_MS);
    expect(DEFAULT_MAX_AGE_MS).toBe(18 * 86_400_000);
  });

  it('sets no not_after only when told to (maxAgeMs: false)', () => {
    const sender = new ToolLedgerQueueSender({
      queueUrl: 'http://unused',
      tenant: 'acme',
      sqs,
      maxAgeMs: false,
    });
    expect(sender.message({ operationId: 'op-1', tool: 't', arguments: {} })).not.toHaveProperty('not_after');
  });

  it('refuses an invalid operation ID before sending', async () => {
    const sender = new ToolLedgerQueueSender({ queueUrl: 'http://unused', tenant: 'acme', sqs });
    await expect(sender.send({ operationId: 'a b', tool: 't', arguments: {} })).rejects.toMatchObject({
      code: 'idempotency_key_invalid',
    });
  });
});
