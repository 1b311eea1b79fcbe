import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { CompletionEvent, EventMessage, EventQueue } from '../../client/completion-events';
import { bearerToken, ToolLedgerClient, WaitTimeoutError } from '../../client/index';
import { sqsEventQueue } from '../../client/sqs-event-queue';
import type { CompletionEvent as SentEvent } from '../../functions/contract/completion-event';
import { type RunningStack, startStack } from '../../functions/local/stack';
import { quietLocalSettings } from '../support/quiet-local-settings';
import { deferred } from './support/manual-clock';
import { fakeClock, operationBody, startScriptedServer } from './support/scripted-server';

/** An event body as local mode sends it (the event itself). */
function eventBody(fields: { id: string; tenant: string; operationId: string; state: string }): string {
  return JSON.stringify({
    event_id: fields.id,
    event_time: '2025-01-02T03:04:06.000Z',
    tenant: fields.tenant,
    operation_id: fields.operationId,
    agent_run_id: null,
    tool: 'webhook.post',
    state: fields.state,
    previous_state: 'running',
    attempt: 1,
    arguments_digest: 'v1:aaaa',
    outcome_code: null,
  });
}

/** The same event as an SQS queue subscribed to the EventBridge bus receives it. */
function envelopeBody(body: string): string {
  return JSON.stringify({
    version: '0',
    id: 'eb-1',
    'detail-type': 'tool-ledger operation state changed',
    source: 'tool-ledger',
    detail: JSON.parse(body),
  });
}

describe('waiting for an operation by its completion event, on local mode’s events queue', () => {
  let dataDir: string;
  let stack: RunningStack;
  let sqs: SQSClient;
  let agent: ToolLedgerClient;
  let approver: ToolLedgerClient;
  const reads: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-wait-event-'));
    const settings = quietLocalSettings(dataDir, 'agent-token=local:agent,approver-token=local:approver');
    stack = await startStack(settings);
    sqs = new SQSClient({
      endpoint: stack.sqsEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const countingFetch: typeof fetch = (input, init) => {
      if ((init?.method ?? 'GET') === 'GET') reads.push(String(input));
      return fetch(input, init);
    };
    agent = new ToolLedgerClient({
      endpoint: stack.apiUrl,
      signer: bearerToken('agent-token'),
      fetch: countingFetch,
    });
    approver = new ToolLedgerClient({ endpoint: stack.apiUrl, signer: bearerToken('approver-token') });
  });

  afterAll(async () => {
    sqs?.destroy();
    await stack?.stop(0);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('returns the operation its event announces, reading it twice and never polling, and leaves other messages on the queue', async () => {
    const id = `wait-event-1-${Date.now()}`;
    const { operation } = await agent.call({
      operationId: id,
      tool: 'workspace.delete_file',
      arguments: { path: `gone-${id}.txt` },
    });
    expect(operation.state).toBe('awaiting_approval');
    // Not this waiter's: another tenant's event for the same ID (as an EventBridge envelope), and noise.
    const foreign = eventBody({ id: 'foreign-1', tenant: 'globex', operationId: id, state: 'succeeded' });
    await sqs.send(
      new SendMessageCommand({ QueueUrl: stack.eventsQueueUrl, MessageBody: envelopeBody(foreign) }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.eventsQueueUrl, MessageBody: 'not an event' }));

    const queue = sqsEventQueue({ queueUrl: stack.eventsQueueUrl, sqs });
    const receiving = deferred();
    const events: EventQueue = {
      receive(options) {
        receiving.resolve();
        return queue.receive(options);
      },
    };
    reads.length = 0;
    const waiting = agent.waitForEvent(id, { events, timeoutMs: 60_000 });
    await receiving.promise;
    await approver.approve(id, operation.arguments_digest);
    const done = await waiting;

    expect(['succeeded', 'failed_terminal']).toContain(done.state);
    expect(done.operation_id).toBe(id);
    // One read before, one after the event: no polling (and the client's tenant, asked once).
    expect(reads.filter((url) => url.includes(encodeURIComponent(id)))).toHaveLength(2);
    expect(reads.filter((url) => !url.includes(encodeURIComponent(id)))).toEqual([
      `${stack.apiUrl}/v1/identity`,
    ]);
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.eventsQueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const left =
      Number(attributes.Attributes?.ApproximateNumberOfMessages) +
      Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible);
    // The waiter deleted its own two events (awaiting_approval, then terminal); the other two remain.
    expect(left).toBe(2);
  });

  it('returns at once, from one read, an operation that settled before the wait began', async () => {
    const id = `wait-event-2-${Date.now()}`;
    const { operation } = await agent.call({
      operationId: id,
      tool: 'workspace.append_line',
      arguments: { path: `notes-${id}.txt`, line: 'one' },
    });
    expect(operation.state).toBe('succeeded');
    const nothing: EventQueue = {
      receive: () => Promise.reject(new Error('the queue was read although the operation had settled')),
    };
    reads.length = 0;
    const done = await agent.waitForEvent(id, { events: nothing });
    expect(done.state).toBe('succeeded');
    expect(reads).toHaveLength(1);
  });
});

describe('waitForEvent against a scripted ledger', () => {
  /** The caller's identity: events of tenant `acme` are its own. */
  const IDENTITY = { status: 200, json: { tenant: 'acme', principal: 'token:1', roles: ['agent'] } };

  /** A queue that hands over the given batches in turn, then nothing; records what was deleted. */
  function scriptedQueue(batches: string[][], onEmpty: (waitMs: number) => void = () => undefined) {
    const deleted: string[] = [];
    const queue: EventQueue = {
      async receive({ waitMs }) {
        const batch = batches.shift();
        if (batch === undefined) {
          onEmpty(waitMs);
          return [];
        }
        return batch.map(
          (body): EventMessage => ({
            body,
            delete: async () => {
              deleted.push(body);
            },
          }),
        );
      },
    };
    return { queue, deleted };
  }

  it('handles each event ID once: a second delivery of an event already acted on reads nothing', async () => {
    const states = ['queued', 'running', 'succeeded'];
    const server = await startScriptedServer((request) =>
      request.url === '/v1/identity'
        ? IDENTITY
        : { status: 200, json: operationBody('op-1', states.shift() ?? 'succeeded') },
    );
    try {
      const client = new ToolLedgerClient({ endpoint: server.url });
      const approval = eventBody({
        id: 'e-1',
        tenant: 'acme',
        operationId: 'op-1',
        state: 'awaiting_approval',
      });
      const success = eventBody({ id: 'e-2', tenant: 'acme', operationId: 'op-1', state: 'succeeded' });
      const { queue, deleted } = scriptedQueue([[approval], [approval], [envelopeBody(success)]]);
      const done = await client.waitForEvent('op-1', {
        events: queue,
        until: ['awaiting_approval', 'succeeded'],
      });
      expect(done.state).toBe('succeeded');
      // First read, one after the approval's event (already running), one after the success's.
      expect(server.requests.filter((r) => r.url.startsWith('/v1/operations/'))).toHaveLength(3);
      expect(deleted).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it('gives up with WaitTimeoutError and the last state seen when no event of the operation arrives', async () => {
    const server = await startScriptedServer((request) =>
      request.url === '/v1/identity' ? IDENTITY : { status: 200, json: operationBody('op-2', 'queued') },
    );
    try {
      const clock = fakeClock();
      const client = new ToolLedgerClient({ endpoint: server.url, clock });
      const other = eventBody({ id: 'e-9', tenant: 'acme', operationId: 'op-other', state: 'succeeded' });
      const { queue, deleted } = scriptedQueue([[other]], (waitMs) => clock.advance(waitMs));
      const error = await client.waitForEvent('op-2', { events: queue, timeoutMs: 5_000 }).catch((e) => e);
      expect(error).toBeInstanceOf(WaitTimeoutError);
      expect((error as WaitTimeoutError).lastOperation?.state).toBe('queued');
      expect(deleted).toEqual([]);
      expect(server.requests.filter((r) => r.url.startsWith('/v1/operations/'))).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});

describe('the event the client reads', () => {
  it('is the event the ledger sends, field for field (the client package cannot import the server’s type)', () => {
    expectTypeOf<CompletionEvent>().toEqualTypeOf<SentEvent>();
    const sent: SentEvent = JSON.parse(
      eventBody({ id: 'e-1', tenant: 't', operationId: 'o', state: 'succeeded' }),
    );
    const read: CompletionEvent = sent;
    expect(Object.keys(read).sort()).toEqual(
      [
        'event_id',
        'event_time',
        'tenant',
        'operation_id',
        'agent_run_id',
        'tool',
        'state',
        'previous_state',
        'attempt',
        'arguments_digest',
        'outcome_code',
      ].sort(),
    );
  });
});
