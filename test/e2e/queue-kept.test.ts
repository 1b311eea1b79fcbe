import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSqsClient } from '../../functions/local/sqs-server';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { waitForOperation } from './api-client';

/**
 * A message local mode's queue accepted is not lost on a clean stop. fauxqs keeps its queues in
 * memory: before, a producer's 40 messages that no executor had handled yet (delayed ones, here, so
 * that none can be handled before the stop) were gone after a restart, and never became operations.
 * Now a clean stop keeps what the queues hold in the data folder and the next start sends it again.
 */

const COUNT = 40;

async function sendWrites(
  sqs: SQSClient,
  queueUrl: string,
  prefix: string,
  delaySeconds: number,
): Promise<void> {
  for (let i = 0; i < COUNT; i += 10) {
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Array.from({ length: 10 }, (_, j) => ({
          Id: `m${i + j}`,
          DelaySeconds: delaySeconds,
          MessageBody: JSON.stringify({
            operation_id: `${prefix}-${i + j}`,
            tenant: 'local',
            tool: 'workspace.write_file',
            arguments: { path: `kept/${prefix}-${i + j}.txt`, content: 'kept' },
          }),
        })),
      }),
    );
    expect(out.Failed ?? []).toEqual([]);
  }
}

async function delayedCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessagesDelayed ?? -1);
}

describe('local mode keeps accepted queue messages across a clean stop (real fauxqs, real restart)', () => {
  let dataDir: string;
  let stack: LocalStackProcess | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-queue-kept-'));
  });

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  it('40 delayed messages sent before a SIGTERM are in the queue after the restart, still delayed, kept owner-only meanwhile', async () => {
    stack = await startLocalStack({ dataDir });
    let sqs = localSqsClient(stack.sqs);
    await sendWrites(sqs, stack.queueUrl, 'delayed', 900);
    expect(await delayedCount(sqs, stack.queueUrl)).toBe(COUNT);
    sqs.destroy();
    expect(await stack.stop()).toMatchObject({ code: 0 });
    const file = join(dataDir, 'queue-tool-ledger-work.json');
    const kept = await stat(file).catch(() => undefined);
    expect(kept, stack.output()).toBeDefined();
    expect((kept?.mode ?? 0o777) & 0o077).toBe(0);

    stack = await startLocalStack({ dataDir });
    sqs = localSqsClient(stack.sqs);
    try {
      expect(await delayedCount(sqs, stack.queueUrl)).toBe(COUNT);
    } finally {
      sqs.destroy();
    }
    // Sent again, the file is gone: a second restart does not send them a third time.
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await stack.stop()).toMatchObject({ code: 0 });
  });

  it('40 messages sent at once and a SIGTERM right after: every one becomes an operation, before the stop or after the restart', async () => {
    stack = await startLocalStack({ dataDir });
    const sqs = localSqsClient(stack.sqs);
    try {
      await sendWrites(sqs, stack.queueUrl, 'ready', 0);
    } finally {
      sqs.destroy();
    }
    expect(await stack.stop()).toMatchObject({ code: 0 });
    stack = await startLocalStack({ dataDir });
    const api = stack.api;
    const token = stack.tokens.agent;
    for (let i = 0; i < COUNT; i++) {
      const op = await waitForOperation(api, `ready-${i}`, (b) => b.state === 'succeeded', {
        token,
        timeoutMs: 60_000,
      });
      expect(op.state).toBe('succeeded');
    }
  });
});
