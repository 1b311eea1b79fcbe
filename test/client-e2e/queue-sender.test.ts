import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearerToken,
  type Operation,
  operationIdFor,
  ToolLedgerClient,
  ToolLedgerRequestError,
} from '../../client/index';
import { ToolLedgerQueueSender } from '../../client/sqs-sender';
import { localSqsClient } from '../../functions/local/sqs-server';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';

/**
 * `ToolLedgerQueueSender` end to end against local mode's work queue (issue 9, SPEC §6): SQS delivers
 * at least once and senders resend, so the same operation sent again must run once; outcomes are read
 * back over HTTP with `waitFor`.
 */

let stack: LocalStackProcess;
let target: WebhookTarget;
let dataDir: string;
let sqs: SQSClient;
let client: ToolLedgerClient;
let sender: ToolLedgerQueueSender;
const run = `queue-e2e-${Date.now()}`;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-queue-e2e-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '500' } });
  // fauxqs's queue URLs name a host that does not resolve: the endpoint is given explicitly.
  sqs = localSqsClient(stack.sqs);
  sender = new ToolLedgerQueueSender({ queueUrl: stack.queueUrl, tenant: 'local', sqs, maxAgeMs: 60_000 });
  client = new ToolLedgerClient({
    endpoint: stack.api,
    signer: bearerToken(stack.tokens.agent),
    deadlineMs: 20_000,
  });
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

/** Waits until every message sent so far has been received and deleted by the executor loop. */
async function queueDrained(timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const depth =
      Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (depth === 0) return;
    if (Date.now() > deadline) throw new Error(`the work queue still holds ${depth} messages`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `waitFor` for an operation sent to the queue: the record exists only once the executor has taken
 * the message, and until then `GET` answers 404, which `waitFor` does not wait through (yet).
 */
async function waitForSent(operationId: string, timeoutMs = 15_000): Promise<Operation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.get(operationId);
      return await client.waitFor(operationId, { timeoutMs: Math.max(1, deadline - Date.now()) });
    } catch (error) {
      if (!(error instanceof ToolLedgerRequestError && error.status === 404) || Date.now() > deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('ToolLedgerQueueSender against local mode', () => {
  it('a message sent twice runs once', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 1, callIndex: 0 });
    const input = {
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/queue.txt', line: 'from the queue' },
      agentRunId: run,
    };
    const sent = [await sender.send(input), await sender.send(input)];
    expect(new Set(sent.map((s) => s.messageId)).size).toBe(2);

    const done = await waitForSent(operationId);
    expect(done).toMatchObject({ state: 'succeeded', attempt: 1, agent_run_id: run });
    await queueDrained();
    expect(await readFile(join(dataDir, 'workspace', 'local', 'log', 'queue.txt'), 'utf8')).toBe(
      'from the queue\n',
    );
    expect((await client.get(operationId)).attempt).toBe(1);
  });

  it('a webhook sent three times while the first copy is still running reaches the target once', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 2, callIndex: 0 });
    const path = `/slow/300/${run}`;
    const input = {
      operationId,
      tool: 'webhook.post',
      arguments: { url: `${target.origin}${path}`, json: {} },
    };
    await sender.send(input);
    await target.waitForHit(path);
    await sender.send(input);
    await sender.send(input);
    const done = await waitForSent(operationId);
    expect(done).toMatchObject({ state: 'succeeded', attempt: 1, result: { status: 200 } });
    await queueDrained();
    expect(target.count(path)).toBe(1);
  });

  it('an action called over HTTP and then sent to the queue under the same ID runs nothing more', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 3, callIndex: 0 });
    const input = {
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/both.txt', line: 'once' },
    };
    const called = await client.call(input);
    expect(called).toMatchObject({ status: 201, replayed: false });
    await sender.send(input);
    await queueDrained();
    expect(await client.get(operationId)).toEqual({ ...called.operation });
    expect(await readFile(join(dataDir, 'workspace', 'local', 'log', 'both.txt'), 'utf8')).toBe('once\n');
  });

  it('a message past its not_after is acknowledged without running', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 4, callIndex: 0 });
    await sender.send({
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/late.txt', line: 'too late' },
      notAfter: new Date(Date.now() - 1_000),
    });
    await queueDrained();
    await expect(client.get(operationId)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(
      readFile(join(dataDir, 'workspace', 'local', 'log', 'late.txt'), 'utf8'),
    ).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});
