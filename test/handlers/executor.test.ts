import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { AnyTool } from '../../functions/domain/tool';
import { type BatchReport, ExecutorLoop } from '../../functions/local/executor-loop';
import { invocationContext, invoke } from '../../functions/local/lambda-context';
import { createWorkQueues, type LocalSqs, startLocalSqs } from '../../functions/local/sqs-server';
import { MAX_RECEIVE_COUNT } from '../../functions/local/stack';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import type { TransitionLogLine } from '../../functions/observability/transition-log';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * The executor handler (SPEC §6) against real dynalite and fauxqs, both in-process: which messages
 * come back (batchItemFailures), which are acknowledged, and what the local executor loop does with
 * each, including redrive to the DLQ.
 */

const EXECUTOR = { name: 'test-executor', timeoutMs: 120_000 };

const db = useDynalite();
let sqs: LocalSqs;
let queueCounter = 0;

beforeAll(async () => {
  sqs = await startLocalSqs(0);
});

afterAll(async () => {
  await sqs?.stop();
});

interface Setup {
  runtime: Runtime;
  handler: ReturnType<typeof createExecutorHandler>;
  queueUrl: string;
  queueArn: string;
  deadLetterQueueUrl: string;
  logs: TransitionLogLine[];
}

async function setup(
  tools: AnyTool[],
  options: { visibilityTimeoutSeconds?: number; dynamoEndpoint?: string } = {},
): Promise<Setup> {
  queueCounter += 1;
  const [table, queues] = await Promise.all([
    freshTable(db.client),
    createWorkQueues(sqs.client, {
      name: `executor-test-${process.pid}-${queueCounter}`,
      visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
      maxReceiveCount: MAX_RECEIVE_COUNT,
    }),
  ]);
  const runtime = buildRuntime(() => tools, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: options.dynamoEndpoint ?? db.endpoint,
    TOOL_LEDGER_SQS_ENDPOINT: sqs.endpoint,
    TOOL_LEDGER_TABLE_NAME: table,
    TOOL_LEDGER_QUEUE_URL: queues.queueUrl,
    TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
  });
  const logs: TransitionLogLine[] = [];
  runtime.deps.metrics = new MemoryLedgerMetrics();
  runtime.deps.log = (line) => logs.push(line);
  return { runtime, handler: createExecutorHandler(() => runtime), ...queues, logs };
}

function message(operationId: string, tool: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    operation_id: operationId,
    tenant: 'acme',
    tool,
    arguments: { target: 't' },
    ...extra,
  });
}

function record(
  messageId: string,
  body: string,
  queueArn = 'arn:aws:sqs:us-east-1:000000000000:q',
): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: '000000000000',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

function failedIds(response: SQSBatchResponse): string[] {
  return response.batchItemFailures.map((f) => f.itemIdentifier).sort();
}

async function run(
  s: Setup,
  records: SQSRecord[],
  timeoutMs = EXECUTOR.timeoutMs,
): Promise<SQSBatchResponse> {
  const event: SQSEvent = { Records: records };
  return s.handler(event, invocationContext({ ...EXECUTOR, timeoutMs }));
}

async function depth(client: SQSClient, queueUrl: string): Promise<number> {
  const out = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

function nextBatch(loop: ExecutorLoop): Promise<BatchReport> {
  return new Promise((resolve) => {
    const off = loop.onBatch((report) => {
      off();
      resolve(report);
    });
  });
}

describe('executor handler', () => {
  it('reports exactly the messages that must come back: failed_retryable, invalid JSON, unbound tenant', async () => {
    const effect = new ScriptedTool('test.effect');
    const flaky = new ScriptedTool('test.flaky');
    flaky.defaultBehaviour = { kind: 'not_applied', code: 'connect_refused' };
    const s = await setup([effect.tool, flaky.tool]);

    const response = await run(s, [
      record('m-ok', message('ok-1', 'test.effect')),
      record('m-bad-json', '{"operation_id": "broken"'),
      record('m-invalid', JSON.stringify({ operation_id: 'x', tenant: 'acme' })),
      record(
        'm-unbound',
        JSON.stringify({ ...JSON.parse(message('other-1', 'test.effect')), tenant: 'other' }),
      ),
      record('m-late', message('late-1', 'test.effect', { not_after: '2000-01-01T00:00:00Z' })),
      record('m-flaky', message('flaky-1', 'test.flaky')),
    ]);

    expect(failedIds(response)).toEqual(['m-bad-json', 'm-flaky', 'm-invalid', 'm-unbound']);
    expect(effect.effectsOf('ok-1')).toBe(1);
    expect(effect.starts.map((st) => st.operationId)).toEqual(['ok-1']);
    expect(await s.runtime.deps.store.get(operationKey('acme', 'ok-1'))).toMatchObject({
      state: 'succeeded',
    });
    expect(await s.runtime.deps.store.get(operationKey('acme', 'late-1'))).toBeUndefined();
    expect(await s.runtime.deps.store.get(operationKey('other', 'other-1'))).toBeUndefined();
    expect(await s.runtime.deps.store.get(operationKey('acme', 'flaky-1'))).toMatchObject({
      state: 'failed_retryable',
      attempt: 1,
    });
  });

  it('acknowledges a batch in which nothing failed, and a conflicting message, without running it', async () => {
    const effect = new ScriptedTool('test.effect');
    const s = await setup([effect.tool]);
    expect(failedIds(await run(s, [record('m-1', message('c-1', 'test.effect'))]))).toEqual([]);
    const conflicting = JSON.stringify({
      ...JSON.parse(message('c-1', 'test.effect')),
      arguments: { target: 'u' },
    });
    expect(failedIds(await run(s, [record('m-2', conflicting)]))).toEqual([]);
    expect(effect.starts).toHaveLength(1);
  });

  it('the same message three times in a batch and again later: one effect, every copy acknowledged', async () => {
    const effect = new ScriptedTool('test.effect');
    effect.defaultBehaviour = { kind: 'succeed', delayMs: 100 };
    const s = await setup([effect.tool]);
    const body = message('dup-1', 'test.effect');

    const first = await run(s, [record('d-1', body), record('d-2', body), record('d-3', body)]);
    expect(failedIds(first)).toEqual([]);
    const later = await run(s, [record('d-4', body)]);
    expect(failedIds(later)).toEqual([]);

    expect(effect.starts).toHaveLength(1);
    expect(effect.effectsOf('dup-1')).toBe(1);
    expect(s.logs.filter((l) => l.state_after === 'succeeded' && l.state_before === 'pending')).toHaveLength(
      1,
    );
  });

  it("bounds each attempt by the invocation's remaining time, keeping the commit reserve", async () => {
    const stuck = new ScriptedTool('test.stuck', { timeoutMs: 60_000 });
    stuck.defaultBehaviour = { kind: 'hang' };
    const s = await setup([stuck.tool]);
    // 4 s left, 2 s kept back for the commit: the tool gets what remains after the claim (under 2 s,
    // never its own 60 s), then the outcome is unknown. `invoke` enforces the 4 s itself: an attempt
    // that outlived the invocation would reject here, so no stopwatch is needed (one, against 2.6 s
    // with 0.6 s for the claim, failed on a busy machine).
    const response = await invoke({ ...EXECUTOR, timeoutMs: 4_000 }, s.handler, {
      Records: [record('m-stuck', message('stuck-1', 'test.stuck'))],
    });
    expect(failedIds(response)).toEqual([]);
    expect(await s.runtime.deps.store.get(operationKey('acme', 'stuck-1'))).toMatchObject({
      state: 'uncertain',
      attempt: 1,
    });
  });

  it('reports the message failed when the ledger cannot be reached', async () => {
    const effect = new ScriptedTool('test.effect');
    const s = await setup([effect.tool], { dynamoEndpoint: 'http://127.0.0.1:9' });
    const response = await run(s, [record('m-down', message('down-1', 'test.effect'))]);
    expect(failedIds(response)).toEqual(['m-down']);
    expect(effect.starts).toHaveLength(0);
  });
});

describe('local executor loop', () => {
  it('deletes acknowledged messages from the queue', async () => {
    const effect = new ScriptedTool('test.effect');
    const s = await setup([effect.tool]);
    const loop = new ExecutorLoop({ client: sqs.client, ...s, fn: EXECUTOR, waitTimeSeconds: 1 });
    const batch = nextBatch(loop);
    loop.start();
    await sqs.client.send(
      new SendMessageCommand({ QueueUrl: s.queueUrl, MessageBody: message('q-1', 'test.effect') }),
    );
    expect(await batch).toMatchObject({ received: 1, deleted: 1, failed: 0, timedOut: false });
    await loop.stop(5_000);
    expect(await depth(sqs.client, s.queueUrl)).toBe(0);
    expect(effect.effectsOf('q-1')).toBe(1);
  });

  it('leaves a poison message on the queue until SQS moves it to the DLQ after maxReceiveCount receives', async () => {
    const s = await setup([], { visibilityTimeoutSeconds: 0 });
    const reports: BatchReport[] = [];
    const loop = new ExecutorLoop({ client: sqs.client, ...s, fn: EXECUTOR, waitTimeSeconds: 1 });
    loop.onBatch((report) => reports.push(report));
    loop.start();
    await sqs.client.send(new SendMessageCommand({ QueueUrl: s.queueUrl, MessageBody: 'not json at all' }));

    const deadline = Date.now() + 20_000;
    let dead: string | undefined;
    while (dead === undefined && Date.now() < deadline) {
      const out = await sqs.client.send(
        new ReceiveMessageCommand({ QueueUrl: s.deadLetterQueueUrl, WaitTimeSeconds: 1 }),
      );
      dead = out.Messages?.[0]?.Body;
    }
    await loop.stop(5_000);
    expect(dead).toBe('not json at all');
    expect(reports).toHaveLength(MAX_RECEIVE_COUNT);
    expect(reports.every((r) => r.received === 1 && r.failed === 1 && r.deleted === 0)).toBe(true);
    expect(await depth(sqs.client, s.queueUrl)).toBe(0);
  });

  it('enforces the hard deadline: a handler still running at the timeout fails its whole batch', async () => {
    const s = await setup([]);
    const hanging = () => new Promise<SQSBatchResponse>(() => {});
    const loop = new ExecutorLoop({
      client: sqs.client,
      ...s,
      handler: hanging,
      fn: { name: 'hanging-executor', timeoutMs: 200 },
      waitTimeSeconds: 1,
    });
    const batch = nextBatch(loop);
    loop.start();
    await sqs.client.send(new SendMessageCommand({ QueueUrl: s.queueUrl, MessageBody: message('h-1', 'x') }));
    expect(await batch).toMatchObject({ received: 1, deleted: 0, failed: 1, timedOut: true });
    await loop.stop(5_000);
    // Not deleted: invisible for the visibility timeout, then delivered again.
    expect(await depth(sqs.client, s.queueUrl)).toBe(1);
  });
});
