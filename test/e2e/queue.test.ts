import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSqsClient } from '../../functions/local/sqs-server';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation, waitForOperation } from './api-client';

/**
 * The SQS front door of local mode, end to end (issue 3, SPEC §6): messages sent by the test to the
 * stack's own queue, and `Prefer: respond-async` calls that the executor loop picks up.
 */

let stack: LocalStackProcess;
let target: WebhookTarget;
let sqs: SQSClient;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-queue-'));
  target = await startWebhookTarget();
  // One executor: the first scenario holds it in a webhook call while copies of the message wait.
  stack = await startLocalStack({
    dataDir,
    env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '500', TOOL_LEDGER_EXECUTOR_CONCURRENCY: '1' },
  });
  // The queue URL names a host that does not resolve: the endpoint is always given explicitly.
  sqs = localSqsClient(stack.sqs);
});

afterAll(async () => {
  sqs?.destroy();
  if (stack) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function queueDepth(): Promise<number> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: stack.queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

async function waitForEmptyQueue(timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await queueDepth()) > 0) {
    if (Date.now() > deadline) throw new Error('the work queue did not drain');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('local mode over SQS', () => {
  it('the same message sent three times, one copy redelivered, causes exactly one effect', async () => {
    const id = `sqs-dup-${Date.now()}`;
    const path = `/hold/${id}`;
    const body = JSON.stringify({
      operation_id: id,
      tenant: 'local',
      tool: 'webhook.post',
      arguments: { url: `${target.origin}${path}`, json: { n: 1 } },
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.queueUrl, MessageBody: body }));
    // The executor is now inside the webhook call (one batch at a time), so the next copies wait.
    await target.waitForHit(path);
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.queueUrl, MessageBody: body }));
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.queueUrl, MessageBody: body }));
    // A consumer that receives a copy and dies: the copy comes back after its visibility timeout.
    const taken = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: stack.queueUrl,
        MaxNumberOfMessages: 1,
        VisibilityTimeout: 1,
        WaitTimeSeconds: 1,
      }),
    );
    expect(taken.Messages).toHaveLength(1);
    expect(taken.Messages?.[0]?.Body).toBe(body);

    target.release(id);
    await waitForEmptyQueue();
    const record = await waitForOperation(stack.api, id, (op) => op.state === 'succeeded', {
      token: stack.tokens.agent,
    });
    expect(record).toMatchObject({ attempt: 1, state: 'succeeded' });
    expect(target.count(path)).toBe(1);
    const line = stack
      .stdoutLines()
      .filter((l) => l.includes('"work message handled"') && l.includes('"receive_count":2'));
    expect(line.length).toBeGreaterThanOrEqual(1);
  });

  it('Prefer: respond-async answers 202 queued, then the executor runs it once', async () => {
    const id = `async-${Date.now()}`;
    const path = `/ok/${id}`;
    const call = {
      key: id,
      body: { tool: 'webhook.post', arguments: { url: `${target.origin}${path}`, json: {} } },
      headers: { prefer: 'respond-async' },
    };
    const accepted = await postOperation(stack.api, { ...call, token: stack.tokens.agent });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('location')).toBe(`/v1/operations/${id}`);
    expect(accepted.headers.get('retry-after')).not.toBeNull();
    expect(accepted.json).toMatchObject({ state: 'queued', attempt: 0 });

    const done = await waitForOperation(stack.api, id, (op) => op.state === 'succeeded', {
      token: stack.tokens.agent,
    });
    expect(done).toMatchObject({ attempt: 1, replayed: false });
    expect(target.count(path)).toBe(1);

    const replay = await postOperation(stack.api, { ...call, token: stack.tokens.agent });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(target.count(path)).toBe(1);
  });

  it('a message for a tenant the queue is not bound to is not run', async () => {
    const id = `sqs-unbound-${Date.now()}`;
    const path = `/ok/${id}`;
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.queueUrl,
        MessageBody: JSON.stringify({
          operation_id: id,
          tenant: 'intruder',
          tool: 'webhook.post',
          arguments: { url: `${target.origin}${path}`, json: {} },
        }),
      }),
    );
    const deadline = Date.now() + 10_000;
    while (!stack.stdoutLines().some((l) => l.includes('"outcome_code":"tenant_not_bound"'))) {
      if (Date.now() > deadline) throw new Error('the message was not handled');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(target.count(path)).toBe(0);
    expect((await getOperation(stack.api, id, stack.tokens.agent)).status).toBe(404);
  });
});
