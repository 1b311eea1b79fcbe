import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearerToken, ToolLedgerClient } from '../../client/index';
import { IdempotencyConflictError } from '../../functions/domain/errors';
import { type RunningStack, startStack } from '../../functions/local/stack';
import { META_OPERATION_ID } from '../../functions/mcp/protocol';
import { inOperationSpan } from '../../functions/observability/tracing';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { mcpClient } from '../mcp/support';
import { freshTable, useDynalite } from '../support/dynalite';
import { drive, ScriptedTool, testLedger } from '../support/harness';
import { quietLocalSettings } from '../support/quiet-local-settings';

/**
 * OpenTelemetry spans, collected by the SDK's in-memory exporter: a registered provider is what a
 * deployment's ADOT layer or its own SDK set-up amounts to.
 */
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();

const ARG_CANARY = 'arg-canary-5f1e';
const RESULT_CANARY = 'result-canary-77ab';

const db = useDynalite();

function attrs(span: ReadableSpan): Record<string, unknown> {
  return span.attributes as Record<string, unknown>;
}

/** Everything a span exporter would ship: names, attributes, events, links. */
function exported(spans: readonly ReadableSpan[]): string {
  return JSON.stringify(
    spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
  );
}

function operationSpans(id: string): ReadableSpan[] {
  return exporter
    .getFinishedSpans()
    .filter((s) => attrs(s)['gen_ai.tool.call.id'] === id && s.instrumentationScope.name === 'tool-ledger');
}

beforeEach(() => {
  exporter.reset();
});

afterAll(async () => {
  await provider.shutdown();
});

describe('one trace from the client through local mode to a webhook target', () => {
  let dataDir: string;
  let stack: RunningStack;
  let target: WebhookTarget;
  let client: ToolLedgerClient;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-tracing-'));
    target = await startWebhookTarget();
    const settings = quietLocalSettings(dataDir, 'agent-token=local:agent+operator');
    stack = await startStack(settings);
    client = new ToolLedgerClient({ endpoint: stack.apiUrl, signer: bearerToken('agent-token') });
  });

  afterAll(async () => {
    await stack?.stop(0);
    await target?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('joins the caller’s span, the API, the engine, DynamoDB and the webhook target in one trace, with no argument in any span', async () => {
    const id = `trace-1-${Date.now()}`;
    const out = await client.call({
      operationId: id,
      tool: 'webhook.post',
      arguments: { url: `${target.origin}/ok/${id}`, json: { note: ARG_CANARY } },
    });
    expect(out.operation.state).toBe('succeeded');

    const spans = exporter.getFinishedSpans();
    const caller = spans.find((s) => s.instrumentationScope.name === '@tool-ledger/client');
    expect(caller?.name).toBe('execute_tool webhook.post');
    const traceId = caller?.spanContext().traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const server = spans.find((s) => s.name === 'POST /v1/operations');
    expect(server?.spanContext().traceId).toBe(traceId);
    expect(server?.parentSpanContext?.spanId).toBe(caller?.spanContext().spanId);

    const [engine] = operationSpans(id);
    expect(engine?.name).toBe('execute_tool webhook.post');
    expect(engine?.spanContext().traceId).toBe(traceId);
    expect(attrs(engine!)).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'webhook.post',
      'tool_ledger.tenant': 'local',
      'tool_ledger.state.before': 'none',
      'tool_ledger.state.after': 'succeeded',
      'tool_ledger.attempt': 1,
    });
    expect(String(attrs(engine!)['tool_ledger.arguments_digest'])).toMatch(/^v1:[0-9a-f]{64}$/);

    const dynamo = spans.filter((s) => s.name.startsWith('DynamoDB.'));
    expect(dynamo.map((s) => s.name)).toContain('DynamoDB.PutItem');
    for (const s of dynamo) expect(s.spanContext().traceId).toBe(traceId);

    const post = spans.find((s) => s.name === 'POST' && attrs(s)['http.response.status_code'] === 200);
    expect(post?.spanContext().traceId).toBe(traceId);
    const hit = target.hits.find((h) => h.path === `/ok/${id}`);
    expect(hit?.traceparent).toBe(`00-${traceId}-${post?.spanContext().spanId}-01`);

    expect(exported(spans)).not.toContain(ARG_CANARY);
    expect(hit?.body).toContain(ARG_CANARY); // the canary did travel: only the spans lack it
  });

  it('sends the call’s completion event to local mode’s events queue, with no argument in it', async () => {
    const id = `event-1-${Date.now()}`;
    await client.call({
      operationId: id,
      tool: 'webhook.post',
      arguments: { url: `${target.origin}/ok/${id}`, json: { note: ARG_CANARY } },
    });
    const sqs = new SQSClient({
      endpoint: stack.sqsEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const seen: Record<string, unknown>[] = [];
    while (!seen.some((e) => e.operation_id === id)) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: stack.eventsQueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 5,
        }),
      );
      for (const m of out.Messages ?? []) seen.push(JSON.parse(m.Body ?? '{}') as Record<string, unknown>);
    }
    expect(seen.find((e) => e.operation_id === id)).toMatchObject({
      tenant: 'local',
      tool: 'webhook.post',
      state: 'succeeded',
      previous_state: 'pending',
      attempt: 1,
    });
    expect(JSON.stringify(seen)).not.toContain(ARG_CANARY);
    sqs.destroy();
  });

  it('carries the trace through the work queue: the executor continues it and the target receives it', async () => {
    const id = `trace-q-${Date.now()}`;
    const out = await client.call({
      operationId: id,
      tool: 'webhook.post',
      arguments: { url: `${target.origin}/ok/${id}`, json: { n: 1 } },
      async: true,
    });
    expect(out.status).toBe(202);
    await target.waitForHit(`/ok/${id}`);
    const traceId = exporter
      .getFinishedSpans()
      .find((s) => s.instrumentationScope.name === '@tool-ledger/client')
      ?.spanContext().traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const hit = target.hits.find((h) => h.path === `/ok/${id}`);
    expect(hit?.traceparent?.split('-')[1]).toBe(traceId);
  });

  it('continues an MCP caller’s trace from params._meta and passes it on to the target', async () => {
    const id = `trace-mcp-${Date.now()}`;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const mcp = await mcpClient(`${stack.apiUrl}/mcp`, 'agent-token');
    try {
      const result = await mcp.callTool({
        name: 'webhook.post',
        arguments: { url: `${target.origin}/ok/${id}`, json: { n: 1 } },
        _meta: { [META_OPERATION_ID]: id, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      });
      expect(result.isError).not.toBe(true);
    } finally {
      await mcp.close();
    }
    const [engine] = operationSpans(id);
    expect(engine?.spanContext().traceId).toBe(traceId);
    expect(target.hits.find((h) => h.path === `/ok/${id}`)?.traceparent?.split('-')[1]).toBe(traceId);
  });

  it('marks a replay, and a conflict by its stable code, on the operation span', async () => {
    const id = `trace-2-${Date.now()}`;
    const call = (n: number) =>
      client.call({
        operationId: id,
        tool: 'webhook.post',
        arguments: { url: `${target.origin}/ok/${id}`, json: { n } },
      });
    await call(1);
    exporter.reset();
    const again = await call(1);
    expect(again.replayed).toBe(true);
    const [replay] = operationSpans(id);
    expect(attrs(replay!)).toMatchObject({
      'tool_ledger.replayed': true,
      'tool_ledger.state.after': 'succeeded',
    });

    exporter.reset();
    await expect(call(2)).rejects.toBeInstanceOf(Error);
    const conflict = exporter
      .getFinishedSpans()
      .find((s) => s.name.startsWith('execute_tool') && s.instrumentationScope.name === 'tool-ledger');
    expect(attrs(conflict!)['error.type']).toBe('idempotency_key_reused');
    expect(target.count(`/ok/${id}`)).toBe(1);
  });
});

describe('spans of the engine', () => {
  it('an uncertain attempt and its reconciliation: the pass and the decision are spans, the result in none', async () => {
    const tool = new ScriptedTool('test.t');
    tool.reconcileVerdict = 'applied';
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'http_503' });
    const first = await inOperationSpan('execute_tool', undefined, () =>
      ledger.submit({ operationId: 'u-1', arguments: { target: ARG_CANARY } }),
    );
    expect(first.record.state).toBe('uncertain');
    const [uncertain] = operationSpans('u-1');
    expect(attrs(uncertain!)).toMatchObject({
      'tool_ledger.state.before': 'none',
      'tool_ledger.state.after': 'uncertain',
      'tool_ledger.outcome_code': 'http_503',
    });

    exporter.reset();
    await drive(ledger);
    const spans = exporter.getFinishedSpans();
    const pass = spans.find((s) => s.name === 'tool_ledger.reconcile_pass');
    expect(pass).toBeDefined();
    const decision = spans.find((s) => s.name === 'tool_ledger.reconcile test.t');
    expect(decision?.parentSpanContext?.spanId).toBe(pass?.spanContext().spanId);
    expect(attrs(decision!)).toMatchObject({
      'gen_ai.tool.call.id': 'u-1',
      'tool_ledger.state.before': 'uncertain',
      'tool_ledger.state.after': 'succeeded',
    });
    expect(exported(spans)).not.toContain(ARG_CANARY);
  });

  it('a result canary appears in no span, first run or replay', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'succeed', result: { secret: RESULT_CANARY } });
    for (let i = 0; i < 2; i++) {
      await inOperationSpan('execute_tool', undefined, () =>
        ledger.submit({ operationId: 'r-1', arguments: { target: ARG_CANARY } }),
      );
    }
    const spans = exporter.getFinishedSpans();
    expect(operationSpans('r-1').map((s) => attrs(s)['tool_ledger.replayed'] === true)).toEqual([
      false,
      true,
    ]);
    expect(exported(spans)).not.toContain(RESULT_CANARY);
    expect(exported(spans)).not.toContain(ARG_CANARY);
  });

  it('a conflict on the engine path is recorded by its code, never its message', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    await ledger.submit({ operationId: 'c-1', arguments: { target: 'a' } });
    exporter.reset();
    const conflict = inOperationSpan('execute_tool', undefined, () =>
      ledger.submit({ operationId: 'c-1', arguments: { target: ARG_CANARY } }),
    );
    await expect(conflict).rejects.toBeInstanceOf(IdempotencyConflictError);
    const span = exporter.getFinishedSpans().find((s) => s.name.startsWith('execute_tool'));
    expect(attrs(span!)['error.type']).toBe('idempotency_key_reused');
    expect(span?.status.message).toBe('idempotency_key_reused');
    expect(exported(exporter.getFinishedSpans())).not.toContain(ARG_CANARY);
  });
});
