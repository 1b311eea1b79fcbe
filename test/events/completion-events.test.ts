import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CompletionEvent,
  EVENT_DETAIL_TYPE,
  EVENT_SOURCE,
} from '../../functions/contract/completion-event';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import { type OperationState, TRANSITIONS } from '../../functions/domain/states';
import { completionEventOf, eventIdOf } from '../../functions/events/completion-event';
import { putEventsEntries } from '../../functions/events/eventbridge-sink';
import { SqsEventSink } from '../../functions/events/sqs-event-sink';
import { createStreamEventsHandler } from '../../functions/events/stream-events';
import { sendUnsentEvents } from '../../functions/events/unsent-events';
import { toItem } from '../../functions/ledger/record-item';
import { type LocalSqs, startLocalSqs } from '../../functions/local/sqs-server';
import { freshTable, useDynalite } from '../support/dynalite';
import { injectFaults } from '../support/faults';
import { drive, ScriptedTool, testLedger } from '../support/harness';

const db = useDynalite();
let sqs: LocalSqs;
let queueSeq = 0;

beforeAll(async () => {
  sqs = await startLocalSqs(0);
});

afterAll(async () => {
  await sqs?.stop();
});

async function newQueue(): Promise<string> {
  queueSeq += 1;
  const out = await sqs.client.send(
    new CreateQueueCommand({ QueueName: `events-${queueSeq}-${Date.now()}` }),
  );
  return out.QueueUrl!;
}

/** Receives until `count` events arrived (long polling: waits on the queue, not on a clock). */
async function receive(client: SQSClient, queueUrl: string, count: number): Promise<CompletionEvent[]> {
  const events: CompletionEvent[] = [];
  while (events.length < count) {
    const out = await client.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
    );
    for (const m of out.Messages ?? []) events.push(JSON.parse(m.Body ?? '{}') as CompletionEvent);
  }
  return events;
}

/** What is on the queue right now (one short poll). */
async function drain(client: SQSClient, queueUrl: string): Promise<number> {
  const out = await client.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
  );
  return out.Messages?.length ?? 0;
}

const WAITED: readonly OperationState[] = [
  'succeeded',
  'failed_terminal',
  'rejected',
  'awaiting_approval',
  'needs_reconciliation',
];

function streamRecord(
  seq: string,
  before: OperationRecord | undefined,
  after: OperationRecord,
): DynamoDBRecord {
  return {
    eventID: `e-${seq}`,
    eventName: before === undefined ? 'INSERT' : 'MODIFY',
    dynamodb: {
      SequenceNumber: seq,
      NewImage: toItem(after) as never,
      ...(before === undefined ? {} : { OldImage: toItem(before) as never }),
    },
  };
}

describe('which transitions make an event', () => {
  it('every transition of the state machine into a terminal state, awaiting_approval or needs_reconciliation, and no other', () => {
    const base = {
      tenant: 'acme',
      operation_id: 'op-1',
      tool: 'test.t',
      attempt: 1,
      arguments_digest: `v1:${'a'.repeat(64)}`,
      updated_at: '2026-12-03T22:00:00.000Z',
    };
    let checked = 0;
    for (const [name, rule] of Object.entries(TRANSITIONS)) {
      for (const from of rule.from) {
        for (const to of rule.to) {
          const event = completionEventOf(from, { ...base, state: to });
          const expected = from !== to && WAITED.includes(to);
          expect(event !== undefined, `${name}: ${from} → ${to}`).toBe(expected);
          if (event) expect(event).toMatchObject({ state: to, previous_state: from, tenant: 'acme' });
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('gives one transition the same ID on every delivery, and two transitions different IDs', () => {
    const a = {
      tenant: 'acme',
      operation_id: 'op-1',
      tool: 't',
      attempt: 1,
      arguments_digest: 'd',
      state: 'succeeded' as const,
      updated_at: 'x',
    };
    expect(eventIdOf(a)).toBe(eventIdOf({ ...a }));
    expect(eventIdOf(a)).not.toBe(eventIdOf({ ...a, tenant: 'globex' }));
    expect(eventIdOf(a)).not.toBe(eventIdOf({ ...a, attempt: 2 }));
    expect(eventIdOf(a)).not.toBe(eventIdOf({ ...a, updated_at: 'y' }));
  });

  it('shapes a PutEvents entry with the source, detail type and bus, and the event as its detail', () => {
    const event = completionEventOf('pending', {
      tenant: 'acme',
      operation_id: 'op-1',
      tool: 't',
      attempt: 1,
      arguments_digest: 'd',
      state: 'succeeded',
      updated_at: '2026-12-03T22:00:00.000Z',
    })!;
    const [entry] = putEventsEntries([event], 'bus-1');
    expect(entry).toMatchObject({
      EventBusName: 'bus-1',
      Source: EVENT_SOURCE,
      DetailType: EVENT_DETAIL_TYPE,
    });
    expect(JSON.parse(entry?.Detail ?? '')).toEqual(event);
    expect(entry?.Time?.toISOString()).toBe(event.event_time);
  });
});

describe('completion events from the engine to the local events queue', () => {
  it('one event per waited-for transition, with identity, tool, state, attempt, digest and code, never the result', async () => {
    const queueUrl = await newQueue();
    const tool = new ScriptedTool('test.t');
    tool.reconcileVerdict = 'applied';
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    ledger.deps.events = new SqsEventSink(sqs.client, queueUrl);

    tool.next({ kind: 'succeed', result: { secret: 'result-canary-31' } });
    await ledger.submit({ operationId: 'ok', arguments: { target: 'arg-canary-32' } });
    await ledger.submit({ operationId: 'ok', arguments: { target: 'arg-canary-32' } }); // a replay: no event
    tool.next({ kind: 'terminal', code: 'http_400' });
    await ledger.submit({ operationId: 'bad', arguments: { target: 'b' } });
    tool.next({ kind: 'uncertain', code: 'http_503' });
    await ledger.submit({ operationId: 'unsure', arguments: { target: 'c' } }); // uncertain: no event yet
    await drive(ledger); // reconciled to succeeded: an event

    const events = await receive(sqs.client, queueUrl, 3);
    expect(await drain(sqs.client, queueUrl)).toBe(0);
    const byId = Object.fromEntries(events.map((e) => [e.operation_id, e]));
    expect(Object.keys(byId).sort()).toEqual(['bad', 'ok', 'unsure']);
    expect(byId.ok).toMatchObject({
      tenant: 'acme',
      tool: 'test.t',
      state: 'succeeded',
      previous_state: 'pending',
      attempt: 1,
      outcome_code: 'succeeded',
    });
    expect(byId.ok?.arguments_digest).toMatch(/^v1:/);
    expect(byId.bad).toMatchObject({ state: 'failed_terminal', outcome_code: 'http_400' });
    expect(byId.unsure).toMatchObject({ state: 'succeeded', previous_state: 'uncertain' });
    const text = JSON.stringify(events);
    expect(text).not.toContain('result-canary-31');
    expect(text).not.toContain('arg-canary-32');
    const record = await ledger.store.get(operationKey('acme', 'ok'));
    expect(byId.ok?.event_id).toBe(eventIdOf(record!));
  });

  it('an operation reserved for approval announces awaiting_approval', async () => {
    const queueUrl = await newQueue();
    const tool = new ScriptedTool('test.approve', { requiresApproval: true });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    ledger.deps.events = new SqsEventSink(sqs.client, queueUrl);
    await ledger.submit({ operationId: 'ask', arguments: { target: 'a' } });
    const [event] = await receive(sqs.client, queueUrl, 1);
    expect(event).toMatchObject({ operation_id: 'ask', state: 'awaiting_approval', previous_state: null });
  });
});

describe('completion events from the engine survive a crash between the transition and the send (local mode)', () => {
  it('an event whose send dies after its transition is sent at the next start with the same event ID, and nothing else is sent', async () => {
    const queueUrl = await newQueue();
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    // The transitions land; the process dies before the send (here: the send throws).
    let attempts = 0;
    ledger.deps.events = {
      publish: () => {
        attempts += 1;
        return Promise.reject(new Error('crashed'));
      },
    };
    await ledger.submit({ operationId: 'op-c', arguments: { target: 'a' } });
    await ledger.submit({ operationId: 'op-d', arguments: { target: 'b' } });
    expect(attempts).toBe(2);
    expect(await drain(sqs.client, queueUrl)).toBe(0);
    const records = await Promise.all(
      ['op-c', 'op-d'].map((id) => ledger.store.get(operationKey('acme', id))),
    );
    for (const record of records)
      expect(Object.keys(record?.unsent_events ?? {})).toEqual([eventIdOf(record!)]);

    // The next start sends what the records hold, once each, and forgets it.
    const sink = new SqsEventSink(sqs.client, queueUrl);
    expect(await sendUnsentEvents(ledger.store, sink)).toBe(2);
    const events = await receive(sqs.client, queueUrl, 2);
    expect(await drain(sqs.client, queueUrl)).toBe(0);
    expect(events.map((e) => e.event_id).sort()).toEqual(records.map((r) => eventIdOf(r!)).sort());
    expect(events.map((e) => [e.operation_id, e.state, e.previous_state]).sort()).toEqual([
      ['op-c', 'succeeded', 'pending'],
      ['op-d', 'succeeded', 'pending'],
    ]);
    // A start after that sends nothing: the records no longer hold the events.
    expect(await sendUnsentEvents(ledger.store, sink)).toBe(0);
    expect(await drain(sqs.client, queueUrl)).toBe(0);
    expect((await ledger.store.get(operationKey('acme', 'op-c')))?.unsent_events).toEqual({});
  });

  it('an event sent right after its transition is forgotten on the record, so no start sends it again', async () => {
    const queueUrl = await newQueue();
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    ledger.deps.events = new SqsEventSink(sqs.client, queueUrl);
    const cleared = new Promise<string>((resolve) => {
      const clear = ledger.store.clearUnsentEvent.bind(ledger.store);
      ledger.store.clearUnsentEvent = async (key, eventId) => {
        await clear(key, eventId);
        resolve(eventId);
      };
    });
    await ledger.submit({ operationId: 'op-e', arguments: { target: 'a' } });
    const [event] = await receive(sqs.client, queueUrl, 1);
    expect(await cleared).toBe(event?.event_id);
    expect(await sendUnsentEvents(ledger.store, ledger.deps.events)).toBe(0);
    expect(await drain(sqs.client, queueUrl)).toBe(0);
  });
});

describe('completion events from the table stream (AWS)', () => {
  it('a publish that fails after the transition is delivered again with the same event ID, and nothing else is sent', async () => {
    const queueUrl = await newQueue();
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    await ledger.submit({ operationId: 'op-s', arguments: { target: 'a' } });
    const done = (await ledger.store.get(operationKey('acme', 'op-s')))!;
    expect(done.unsent_events).toBeUndefined(); // without an engine sink, records carry no events
    const pending: OperationRecord = { ...done, state: 'pending' };
    const batch = {
      Records: [
        streamRecord('100', undefined, pending), // reserve: nobody waits for pending
        streamRecord('101', pending, done), // pending → succeeded: the event
        streamRecord('102', done, { ...done, updated_at: done.updated_at }), // an annotation: no change of state
      ],
    };
    // The first send dies between the transition (already in the table and its stream) and the bus.
    const faults = injectFaults(sqs.client as unknown as DynamoDBClient, [
      { command: 'SendMessageBatchCommand', when: 'before', times: 1, error: () => new Error('crashed') },
    ]);
    const handler = createStreamEventsHandler(() => new SqsEventSink(sqs.client, queueUrl));
    const first = await handler(batch);
    expect(faults.injected).toBe(1);
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: '101' }]);
    expect(await drain(sqs.client, queueUrl)).toBe(0);

    const again = await handler(batch); // Lambda delivers the stream records again
    expect(again.batchItemFailures).toEqual([]);
    const [event] = await receive(sqs.client, queueUrl, 1);
    expect(event).toMatchObject({ operation_id: 'op-s', state: 'succeeded', previous_state: 'pending' });
    expect(event?.event_id).toBe(eventIdOf(done));
    expect(await drain(sqs.client, queueUrl)).toBe(0);
  });
});
