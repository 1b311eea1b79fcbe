import { randomUUID } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import type { Context, SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { AnyTool } from '../../functions/domain/tool';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import type { TransitionLogLine } from '../../functions/observability/transition-log';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { type DynaliteHandle, freshTable } from '../support/dynalite';
import { MemoryQueue } from '../support/harness';

/**
 * The SQS executor handler (functions/handlers/executor.ts) over dynalite, wired from the environment
 * as in Lambda (buildRuntime), with a work queue bound to tenant `acme`. Messages go in as SQS event
 * records; what SQS would do with each comes back as `batchItemFailures`.
 */
export interface ExecutorHarness {
  runtime: Runtime;
  queue: MemoryQueue;
  logs: TransitionLogLine[];
  table: string;
  /** Sends one batch; returns the IDs of the records reported failed (redelivered, then the DLQ). */
  send(records: SQSRecord[]): Promise<string[]>;
  recordCount(): Promise<number>;
}

/** Builds the executor over a fresh table of `db`. */
export async function executorHarness(db: DynaliteHandle, tools: AnyTool[]): Promise<ExecutorHarness> {
  const table = await freshTable(db.client);
  const runtime = buildRuntime(() => tools, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: table,
    TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
  });
  const queue = new MemoryQueue();
  const logs: TransitionLogLine[] = [];
  runtime.deps.queue = queue;
  runtime.deps.metrics = new MemoryLedgerMetrics();
  runtime.deps.log = (line) => logs.push(line);
  const handler = createExecutorHandler(() => runtime);
  return {
    runtime,
    queue,
    logs,
    table,
    async send(records) {
      const response: SQSBatchResponse = await handler({ Records: records }, lambdaContext());
      return response.batchItemFailures.map((failure) => failure.itemIdentifier);
    },
    async recordCount() {
      const out = await db.client.send(
        new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }),
      );
      return out.Count ?? 0;
    },
  };
}

/** A Lambda context with a minute left. */
export function lambdaContext(): Context {
  return {
    awsRequestId: randomUUID(),
    functionName: 'fuzz-executor',
    getRemainingTimeInMillis: () => 60_000,
  } as unknown as Context;
}

/** An SQS record as the event source mapping delivers it. */
export function sqsRecord(body: string, messageId: string = randomUUID(), receiveCount = 1): SQSRecord {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(Date.now()),
      SenderId: '000000000000',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:tool-ledger-work',
    awsRegion: 'us-east-1',
  };
}

/** Parsed JSON log lines from captured output (non-JSON chunks are skipped). */
export function jsonLines(lines: readonly string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const chunk of lines) {
    for (const line of chunk.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // A partial chunk: ignored.
      }
    }
  }
  return out;
}
