import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { createApiHandler } from '../../functions/http/api-handler';
import { IamAuthenticator } from '../../functions/http/auth-iam';
import { localSqsClient } from '../../functions/local/sqs-server';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { SenderBinding } from '../../functions/queue/sender-binding';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { send, waitForOperation } from '../e2e/api-client';
import { sqsRecord } from '../fuzz/executor-harness';
import { parse, testContext, toEvent } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { startWorld, type World } from './world';

/**
 * Work sent through the queue and the self-approval rule. Whoever puts an operation on the work queue
 * asked for it: on AWS SQS stamps the sender on every message (`SenderId`, which no producer can
 * choose), and that sender is the requester, so the role that sent it cannot approve it under any
 * session name. Local mode's queue carries no identity (any process of the machine may write to it):
 * the record says the requester is unknown, and no approval can be told apart from a self-approval.
 * Before, the requester was recorded as `queue:<tenant>`, which matched nobody, so the sender approved
 * its own operation.
 */

const ACCT = '123456789012';
const PRODUCER_ROLE_ID = 'AROAPRODUCER0000001';
const REVIEWER_ROLE_ID = 'AROAREVIEWER0000001';
const session = (role: string, name: string) => `arn:aws:sts::${ACCT}:assumed-role/${role}/${name}`;
const IAM_TENANTS = JSON.stringify({
  acme: {
    agents: [`arn:aws:iam::${ACCT}:role/Producer`],
    approvers: [`arn:aws:iam::${ACCT}:role/Producer`, `arn:aws:iam::${ACCT}:role/Reviewer`],
  },
});

describe('on AWS: the queue sender is the requester', () => {
  const db = useDynalite();
  let world: World;
  let tool: ScriptedTool;
  let deliver: (body: unknown, senderId: string) => Promise<void>;
  let approve: (
    id: string,
    digest: string,
    arn: string,
    principalId: string,
  ) => Promise<ReturnType<typeof parse>>;

  beforeAll(async () => {
    tool = new ScriptedTool('test.guarded', { requiresApproval: true });
    world = await startWorld(db, () => [tool.tool]);
    // The executor as on AWS: a sender binding, and each record stamped with its sender.
    const senders = new SenderBinding([{ id: PRODUCER_ROLE_ID, tenants: ['acme'] }]);
    const executor = createExecutorHandler(() => ({ ...world.runtime, queueSenders: senders }));
    deliver = async (body, senderId) => {
      const record: SQSRecord = sqsRecord(JSON.stringify(body));
      record.attributes.SenderId = senderId;
      const out = await executor({ Records: [record] }, testContext());
      expect(out.batchItemFailures).toEqual([]);
    };
    const api = createApiHandler({ deps: world.runtime.deps }, new IamAuthenticator(IAM_TENANTS));
    approve = async (id, digest, arn, principalId) => {
      const event = toEvent({
        path: `/v1/operations/${id}/approval`,
        token: null,
        body: { decision: 'approve', arguments_digest: digest },
      });
      const identity = event.requestContext.identity as { userArn: string; caller: string };
      identity.userArn = arn;
      identity.caller = principalId;
      return parse(await api(event, testContext()));
    };
  });

  const message = (id: string) => ({
    operation_id: id,
    tenant: 'acme',
    tool: 'test.guarded',
    arguments: { target: id },
  });

  it('the record names the sender, and a second session of the sending role cannot approve (403 self_approval, nothing queued)', async () => {
    await deliver(message('q-self'), `${PRODUCER_ROLE_ID}:orchestrator-7`);
    const record = await world.runtime.deps.store.get(operationKey('acme', 'q-self'));
    expect(record).toMatchObject({
      state: 'awaiting_approval',
      requested_by: `sqs-sender:${PRODUCER_ROLE_ID}:orchestrator-7`,
    });
    expect(record?.requester_unidentified).toBeUndefined();
    const res = await approve(
      'q-self',
      record?.arguments_digest ?? '',
      session('Producer', 'alice'),
      `${PRODUCER_ROLE_ID}:alice`,
    );
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('self_approval');
    expect((await world.runtime.deps.store.get(operationKey('acme', 'q-self')))?.state).toBe(
      'awaiting_approval',
    );
    expect(world.queue.messages).toHaveLength(0);
    expect(tool.starts).toHaveLength(0);
  });

  it('another role approves what the sender asked for', async () => {
    await deliver(message('q-other'), `${PRODUCER_ROLE_ID}:orchestrator-7`);
    const record = await world.runtime.deps.store.get(operationKey('acme', 'q-other'));
    const res = await approve(
      'q-other',
      record?.arguments_digest ?? '',
      session('Reviewer', 'bob'),
      `${REVIEWER_ROLE_ID}:bob`,
    );
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('queued');
  });
});

describe('in local mode: a queue without identity (real fauxqs)', () => {
  let stack: LocalStackProcess;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-queue-requester-'));
    stack = await startLocalStack({ dataDir });
  });

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('work sent straight to the queue says its requester is unknown, and no approver can approve it as if it were someone else’s', async () => {
    const sqs = localSqsClient(stack.sqs);
    try {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: stack.queueUrl,
          MessageBody: JSON.stringify({
            operation_id: 'local-q-1',
            tenant: 'local',
            tool: 'workspace.delete_file',
            arguments: { path: 'notes/q.txt' },
          }),
        }),
      );
    } finally {
      sqs.destroy();
    }
    const op = await waitForOperation(stack.api, 'local-q-1', (b) => b.state === 'awaiting_approval', {
      token: stack.tokens.approver,
      timeoutMs: 30_000,
    });
    const res = await send(stack.api, '/v1/operations/local-q-1/approval', {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', arguments_digest: op.arguments_digest }),
    });
    expect(res.status).toBe(403);
    expect(res.json?.code).toBe('self_approval');
    expect(res.json?.detail ?? res.json?.title).toBeTruthy();
    const after = await waitForOperation(stack.api, 'local-q-1', () => true, { token: stack.tokens.agent });
    expect(after.state).toBe('awaiting_approval');
    // Withdrawing it is always allowed.
    const rejected = await send(stack.api, '/v1/operations/local-q-1/approval', {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'reject', arguments_digest: op.arguments_digest }),
    });
    expect(rejected.status).toBe(200);
    expect(rejected.json?.state).toBe('rejected');
  });
});
