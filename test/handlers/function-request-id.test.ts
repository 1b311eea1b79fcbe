import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { invocationContext } from '../../functions/local/lambda-context';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { buildRuntime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * Transition lines name the Lambda invocation that wrote them (`function_request_id`), next to the
 * request they belong to (`request_id`: here the SQS message), so one line leads to the invocation's
 * REPORT line, duration and memory in CloudWatch.
 */

const db = useDynalite();
afterEach(() => {
  vi.restoreAllMocks();
});

describe('function_request_id', () => {
  it('is on every transition line the executor writes', async () => {
    const tool = new ScriptedTool('test.effect');
    const runtime = buildRuntime(() => [tool.tool], {
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
      TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
      TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
    });
    runtime.deps.metrics = new MemoryLedgerMetrics();
    const printed: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    const record: SQSRecord = {
      messageId: 'msg-7',
      receiptHandle: 'rh',
      body: JSON.stringify({
        operation_id: 'fr-1',
        tenant: 'acme',
        tool: 'test.effect',
        arguments: { target: 't' },
      }),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '0',
        SenderId: '000000000000',
        ApproximateFirstReceiveTimestamp: '0',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
      awsRegion: 'us-east-1',
    };
    const handler = createExecutorHandler(() => runtime);
    await handler(
      { Records: [record] },
      invocationContext({ name: 'executor', timeoutMs: 60_000 }, 'inv-42'),
    );
    vi.restoreAllMocks();
    const transitions = printed
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.includes('"operation transition"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(transitions.length).toBeGreaterThanOrEqual(2);
    for (const line of transitions) {
      expect(line).toMatchObject({
        function_request_id: 'inv-42',
        request_id: 'msg-7',
        operation_id: 'fr-1',
      });
    }
  });
});
