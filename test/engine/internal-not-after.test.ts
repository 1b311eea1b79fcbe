import { type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import { decideApproval } from '../../functions/engine/approval';
import { notAfterMarginSeconds } from '../../functions/engine/not-after';
import { reconcilePass } from '../../functions/engine/reconcile';
import { createWorkQueues, type LocalSqs, startLocalSqs } from '../../functions/local/sqs-server';
import { handleWorkMessage } from '../../functions/queue/handle-work-message';
import { SqsWorkQueue } from '../../functions/queue/sqs-work-queue';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

/**
 * Every message the ledger sends itself carries `not_after` (SPEC §8), on a real queue (fauxqs): the
 * asynchronous reservation, the approval, and the reconciler's re-enqueue. A DLQ redrive resets a
 * message's age, so without it a twice-redriven message could outlive its record and run again.
 */

const RETENTION_SECONDS = 30 * 86_400;

const db = useDynalite();
let sqs: LocalSqs;
let queues = 0;
beforeAll(async () => {
  sqs = await startLocalSqs(0);
});
afterAll(async () => {
  await sqs?.stop();
});

async function ledgerOnFauxqs(tools: ScriptedTool[]): Promise<{ ledger: TestLedger; queueUrl: string }> {
  queues += 1;
  const { queueUrl } = await createWorkQueues(sqs.client, {
    name: `not-after-${process.pid}-${queues}`,
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 5,
  });
  const ledger = testLedger(
    db.client,
    await freshTable(db.client),
    tools.map((t) => t.tool),
    { retentionSeconds: RETENTION_SECONDS, queuedStaleMs: 1_000 },
  );
  ledger.deps.queue = new SqsWorkQueue(sqs.client, queueUrl);
  return { ledger, queueUrl };
}

async function receiveOne(queueUrl: string): Promise<Message> {
  const out = await sqs.client.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
  );
  expect(out.Messages).toHaveLength(1);
  return out.Messages![0]!;
}

/** The message's `not_after`, checked against the window it must fall in for a send at `sentAt`. */
function expectNotAfter(message: Message, record: OperationRecord, sentAt: { from: number; to: number }) {
  const body = JSON.parse(message.Body!) as { not_after?: string; operation_id: string };
  expect(body.operation_id).toBe(record.operation_id);
  expect(body.not_after).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const notAfter = Date.parse(body.not_after!);
  const keep = (record.retention_seconds - notAfterMarginSeconds(record.retention_seconds)) * 1000;
  expect(notAfter).toBeGreaterThanOrEqual(sentAt.from + keep);
  expect(notAfter).toBeLessThanOrEqual(sentAt.to + keep);
  // Before the earliest moment the record could expire: it cannot end before the send.
  expect(notAfter).toBeLessThan(sentAt.from + record.retention_seconds * 1000);
}

describe('not_after on the ledger’s own messages', () => {
  it('an asynchronous reservation (Prefer: respond-async) enqueues with not_after', async () => {
    const tool = new ScriptedTool('test.effect');
    const { ledger, queueUrl } = await ledgerOnFauxqs([tool]);
    const from = ledger.deps.clock();
    const result = await ledger.submit({ operationId: 'async-1', arguments: { target: 'a' }, mode: 'async' });
    const to = ledger.deps.clock();
    expect(result.record.state).toBe('queued');
    expectNotAfter(await receiveOne(queueUrl), result.record as OperationRecord, { from, to });
  });

  it('an approval enqueues with not_after', async () => {
    const tool = new ScriptedTool('test.guarded', { requiresApproval: true });
    const { ledger, queueUrl } = await ledgerOnFauxqs([tool]);
    const first = await ledger.submit({ operationId: 'appr-1', arguments: { target: 'a' } });
    const from = ledger.deps.clock();
    await decideApproval(ledger.deps, ledger.req(), {
      tenant: 'acme',
      principal: 'human-1',
      operationId: 'appr-1',
      decision: 'approve',
      argumentsDigest: first.record.arguments_digest,
    });
    const to = ledger.deps.clock();
    expectNotAfter(await receiveOne(queueUrl), first.record as OperationRecord, { from, to });
  });

  it('the reconciler’s re-enqueue of a stale queued record counts from its send, and the copy runs', async () => {
    const tool = new ScriptedTool('test.effect');
    const { ledger, queueUrl } = await ledgerOnFauxqs([tool]);
    // The first message is lost (the queue refuses it), so the record stays queued.
    const queue = ledger.deps.queue;
    ledger.deps.queue = { enqueue: async () => Promise.reject(new Error('lost')) };
    await ledger.submit({ operationId: 'stale-1', arguments: { target: 'a' }, mode: 'async' });
    ledger.deps.queue = queue;
    // Much later than its creation: a not_after counted from created_at would already be near.
    ledger.advance(20 * 86_400_000);
    const from = ledger.deps.clock();
    const pass = await reconcilePass(ledger.deps, ledger.req());
    const to = ledger.deps.clock();
    expect(pass.actions).toEqual({ requeued: 1 });
    const record = (await ledger.store.get(operationKey('acme', 'stale-1')))!;
    const message = await receiveOne(queueUrl);
    expectNotAfter(message, record, { from, to });
    expect(
      await handleWorkMessage(ledger.deps, ledger.req(), message.Body!, new Set(['acme'])),
    ).toMatchObject({
      action: 'ack',
      code: 'completed_succeeded',
    });
    expect(tool.effectsOf('stale-1')).toBe(1);
  });

  it('a redriven copy past its not_after is acknowledged without running', async () => {
    const tool = new ScriptedTool('test.effect');
    const { ledger, queueUrl } = await ledgerOnFauxqs([tool]);
    await ledger.submit({ operationId: 'late-1', arguments: { target: 'a' }, mode: 'async' });
    const message = await receiveOne(queueUrl);
    ledger.advance(RETENTION_SECONDS * 1000);
    expect(await handleWorkMessage(ledger.deps, ledger.req(), message.Body!, new Set(['acme']))).toEqual({
      action: 'ack',
      code: 'not_after_passed',
    });
    expect(tool.starts).toHaveLength(0);
  });
});
