import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { SenderBinding } from '../../functions/queue/sender-binding';

const QUEUE_SENDERS_VARIABLE = SETTINGS.queueSenders.name;

import { operationKey } from '../../functions/contract/keys';
import { invocationContext } from '../../functions/local/lambda-context';
import { logger } from '../../functions/observability/logger';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * The hostile producer (SPEC §6): on AWS the executor checks a message's tenant against the tenants
 * its sender (SQS `SenderId`) may act for, so one tenant's producer cannot create, retry or take the
 * operation IDs of another tenant on a queue they share. The runtime is built in AWS mode (no
 * `TOOL_LEDGER_LOCAL`), against dynalite.
 */

const ACME_PRODUCER = 'AROAACMEPRODUCER0001';
const GLOBEX_PRODUCER = 'AROAGLOBEXPRODUCER01';
const API_ROLE = 'AROALEDGERAPIROLE001';

const db = useDynalite();
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

async function awsRuntime(tool: ScriptedTool, senders: string | undefined): Promise<Runtime> {
  // AWS mode takes its credentials from the default chain; dynalite accepts any.
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  vi.stubEnv('AWS_REGION', 'us-east-1');
  const runtime = buildRuntime(() => [tool.tool], {
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
    TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme', 'globex']),
    ...(senders === undefined ? {} : { [QUEUE_SENDERS_VARIABLE]: senders }),
  });
  runtime.deps.metrics = new MemoryLedgerMetrics();
  runtime.deps.log = () => {};
  return runtime;
}

function record(messageId: string, senderId: string, tenant: string, operationId: string): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: JSON.stringify({
      operation_id: operationId,
      tenant,
      tool: 'test.effect',
      arguments: { target: 't' },
    }),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: senderId,
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:work',
    awsRegion: 'us-east-1',
  };
}

async function run(runtime: Runtime, records: SQSRecord[]): Promise<string[]> {
  const handler = createExecutorHandler(() => runtime);
  const event: SQSEvent = { Records: records };
  const response = await handler(event, invocationContext({ name: 'executor', timeoutMs: 120_000 }));
  return response.batchItemFailures.map((f) => f.itemIdentifier).sort();
}

const senders = JSON.stringify([
  { id: ACME_PRODUCER, tenants: ['acme'] },
  { id: GLOBEX_PRODUCER, tenants: ['globex'] },
  { id: API_ROLE, tenants: '*' },
]);

describe('queue senders on AWS', () => {
  it('a producer bound to tenant acme naming tenant globex is reported failed, reserves nothing, and is logged with a code and no content', async () => {
    const tool = new ScriptedTool('test.effect');
    const runtime = await awsRuntime(tool, senders);
    const warnings: unknown[][] = [];
    vi.spyOn(logger, 'warn').mockImplementation((...args: unknown[]) => {
      warnings.push(args);
    });

    const failed = await run(runtime, [
      record('m-hostile', `${ACME_PRODUCER}:orchestrator`, 'globex', 'taken-first'),
      record('m-own', `${ACME_PRODUCER}:orchestrator`, 'acme', 'acme-1'),
    ]);

    expect(failed).toEqual(['m-hostile']);
    expect(await runtime.deps.store.get(operationKey('globex', 'taken-first'))).toBeUndefined();
    expect(tool.starts.map((s) => s.operationId)).toEqual(['acme-1']);
    const refusal = warnings.find(([message]) => message === 'work message refused');
    expect(refusal?.[1]).toEqual({ outcome_code: 'sender_not_bound' });
    expect(JSON.stringify(warnings)).not.toContain('taken-first');

    // globex's own producer can still use the ID the hostile message named.
    expect(await run(runtime, [record('m-globex', `${GLOBEX_PRODUCER}:x`, 'globex', 'taken-first')])).toEqual(
      [],
    );
    expect(await runtime.deps.store.get(operationKey('globex', 'taken-first'))).toMatchObject({
      state: 'succeeded',
    });
  });

  it("the stack's own roles may send for any tenant; a session name cannot borrow another role's binding", async () => {
    const tool = new ScriptedTool('test.effect');
    const runtime = await awsRuntime(tool, senders);
    const failed = await run(runtime, [
      record('m-api-acme', `${API_ROLE}:tool-ledger-api`, 'acme', 'a-1'),
      record('m-api-globex', `${API_ROLE}:tool-ledger-api`, 'globex', 'g-1'),
      // The session name is the assumer's choice: naming the API role's ID in it changes nothing.
      record('m-spoof', `${ACME_PRODUCER}:${API_ROLE}`, 'globex', 'g-2'),
      record('m-stranger', 'AIDASTRANGER00000001', 'acme', 'a-2'),
      record('m-account', '123456789012', 'acme', 'a-3'),
    ]);
    expect(failed).toEqual(['m-account', 'm-spoof', 'm-stranger']);
    expect(tool.starts.map((s) => s.operationId).sort()).toEqual(['a-1', 'g-1']);
  });

  it('a deployment without a sender binding refuses every message (fail closed)', async () => {
    const tool = new ScriptedTool('test.effect');
    const runtime = await awsRuntime(tool, undefined);
    expect(await run(runtime, [record('m-1', `${API_ROLE}:api`, 'acme', 'a-1')])).toEqual(['m-1']);
    expect(tool.starts).toHaveLength(0);
  });

  it('a malformed binding fails the cold start instead of running unchecked', () => {
    for (const raw of ['{}', '[{"id":"AROA:x","tenants":["acme"]}]', '[{"id":"AROA","tenants":"acme"}]']) {
      expect(() => SenderBinding.parse(raw)).toThrow(QUEUE_SENDERS_VARIABLE);
    }
  });
});

describe('queue senders in local mode', () => {
  it('the binding to the tokens’ tenants stays: a message naming another tenant is refused and reserves nothing', async () => {
    const tool = new ScriptedTool('test.effect');
    const runtime = buildRuntime(() => [tool.tool], {
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
      TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
      TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['local']),
    });
    runtime.deps.metrics = new MemoryLedgerMetrics();
    runtime.deps.log = () => {};
    expect(runtime.queueSenders).toBeUndefined();
    const failed = await run(runtime, [
      record('m-other', '000000000000', 'intruder', 'i-1'),
      record('m-local', '000000000000', 'local', 'l-1'),
    ]);
    expect(failed).toEqual(['m-other']);
    expect(await runtime.deps.store.get(operationKey('intruder', 'i-1'))).toBeUndefined();
    expect(tool.starts.map((s) => s.operationId)).toEqual(['l-1']);
  });
});
