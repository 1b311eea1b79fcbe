import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { captureOutput } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type ExecutorHarness, executorHarness, jsonLines, sqsRecord } from './executor-harness';
import { FUZZ_TEST_TIMEOUT_MS, runs } from './fuzz-api';
import { BAD_NUMBERS, defectArb, type Json, jsonTreeArb, writeJson } from './hostile-json';

/**
 * Bad-input fuzzing of work-queue messages (SPEC §6) through the executor handler on dynalite. A
 * message that can never run must be reported as a batch item failure (so SQS redelivers it and then
 * its DLQ keeps the evidence), with one log line naming a reason code and nothing of its content, and
 * must create no record and run nothing; the valid message next to it in the same batch runs as usual.
 *
 * That such a message really lands in the DLQ after maxReceiveCount receives is proven end to end on
 * fauxqs by test/handlers/executor.test.ts ("leaves a poison message on the queue until SQS moves it
 * to the DLQ after maxReceiveCount receives"); it is not repeated here.
 */

/** Reason codes a refused message may be logged with (handle-work-message.ts and the engine's codes). */
const POISON_CODES = [
  'invalid_json',
  'invalid_message',
  'tenant_not_bound',
  'validation_failed',
  'tool_unknown',
  'idempotency_key_invalid',
  'idempotency_key_missing',
  'payload_too_large',
];

/** Planted in every malformed message: it must never appear in a log line. */
const CANARY = 'CANARY-sqs-5b1e';

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

const db = useDynalite();
let effect: ScriptedTool;
let executor: ExecutorHarness;

beforeEach(async () => {
  effect = new ScriptedTool('test.effect');
  executor = await executorHarness(db, [effect.tool]);
});

let counter = 0;
function freshId(): string {
  counter += 1;
  return `sqs-${counter}`;
}

/** A message the executor runs. */
function validMessage(id = freshId()): Record<string, Json> {
  return { operation_id: id, tenant: 'acme', tool: 'test.effect', arguments: { target: CANARY } };
}

/** Message text that is not a JSON object, or not JSON at all. */
const notAnObjectArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `${s}${CANARY}`),
  fc.nat().map((n) => {
    const text = JSON.stringify(validMessage());
    return text.slice(0, n % text.length);
  }),
  fc.constantFrom('', ' ', 'null', '[]', '"x"', '1', 'true', `["${CANARY}"]`, `"${CANARY}"`),
  fc.constantFrom(...BAD_NUMBERS),
  fc
    .integer({ min: 256 * 1024 - 80, max: 300_000 })
    .map((n) => JSON.stringify({ ...validMessage(), arguments: { target: CANARY.padEnd(n, 'x') } })),
  fc.integer({ min: 41, max: 10_000 }).map((depth) => `${'['.repeat(depth)}"${CANARY}"${']'.repeat(depth)}`),
);

/** A valid message with one defect planted anywhere in its text. */
const plantedArb: fc.Arbitrary<string> = fc
  .tuple(jsonTreeArb(3), defectArb, fc.nat())
  .map(([tree, defect, at]) =>
    writeJson({ ...validMessage(), arguments: { target: CANARY, value: tree } }, defect, at),
  );

/** A value of a type no message field has where it stands (every field is a string or an object). */
const wrongTypeValue = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([CANARY]),
  fc.constant({ [CANARY]: CANARY }),
);

/** A JSON object that is not a valid message, or names something that cannot run. */
const wrongShapeArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      fc.record({
        field: fc.constantFrom('operation_id', 'tenant', 'tool', 'arguments', 'agent_run_id', 'not_after'),
        value: wrongTypeValue,
      }),
      fc.record({
        field: fc.constantFrom('operation_id'),
        value: fc.oneof(
          fc.constantFrom('', ' ', 'a b', 'a\nb', 'a\u0000b', 'é', `${CANARY}\r\n`, 'k'.repeat(256)),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }).filter((s) => !/^[\x21-\x7e]+$/.test(s)),
        ),
      }),
      fc.record({
        field: fc.constantFrom('tenant'),
        value: fc.constantFrom('', 'other', 'ACME', 'acme ', ' acme', 'acme#x', `${CANARY}`, 'acme\u0000'),
      }),
      fc.record({
        field: fc.constantFrom('tool'),
        value: fc.constantFrom(
          '',
          'unknown.tool',
          'TEST.EFFECT',
          'test.effect ',
          `${CANARY}`,
          'test.effect\u0000',
        ),
      }),
      fc.record({
        field: fc.constantFrom('arguments'),
        value: fc.constantFrom<Json>(
          {},
          { target: 1 },
          { target: CANARY, [CANARY]: 1 },
          { target: [CANARY] },
          [CANARY],
          { target: CANARY.repeat(5000) },
        ),
      }),
      fc.record({
        field: fc.constantFrom('not_after'),
        value: fc.constantFrom(
          '',
          'yesterday',
          '2020-13-01T00:00:00Z',
          '2020-01-01',
          '2020-01-01T00:00:00',
          CANARY,
        ),
      }),
      fc.record({ field: fc.constantFrom('agent_run_id'), value: fc.constant('r'.repeat(256)) }),
      fc.record({
        field: fc.constantFrom('missing'),
        value: fc.constantFrom('operation_id', 'tenant', 'tool', 'arguments'),
      }),
      fc.record({
        field: fc.constantFrom('extra'),
        value: fc.constantFrom('principal', 'state', 'attempt', 'Tenant', CANARY, ''),
      }),
    ),
  )
  .map(([{ field, value }]) => {
    const message: Record<string, unknown> = validMessage();
    if (field === 'missing') delete message[value as string];
    else if (field === 'extra') message[value as string] = CANARY;
    else message[field] = value;
    return JSON.stringify(message);
  });

const malformedArb = fc.oneof(notAnObjectArb, plantedArb, wrongShapeArb);

describe('malformed work messages, generated', () => {
  it('are reported as batch item failures with a logged reason code and no content, create no record and run nothing; the valid message beside them runs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(malformedArb, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        async (bodies, slot) => {
          const valid = validMessage();
          const records = bodies.map((body, i) => sqsRecord(body, `bad-${counter}-${i}`));
          const good = sqsRecord(JSON.stringify(valid), `good-${counter}`);
          records.splice(slot % (records.length + 1), 0, good);
          const before = await executor.recordCount();
          const starts = effect.starts.length;

          const { result: failed, lines } = await captureOutput(() => executor.send(records));

          expect(failed.sort()).toEqual(
            records
              .filter((r) => r !== good)
              .map((r) => r.messageId)
              .sort(),
          );
          expect(await executor.recordCount()).toBe(before + 1);
          expect(
            await executor.runtime.deps.store.get(operationKey('acme', valid.operation_id as string)),
          ).toMatchObject({
            state: 'succeeded',
          });
          expect(effect.starts.length).toBe(starts + 1);
          expect(executor.queue.messages).toEqual([]);

          const output = lines.join('');
          expect(output).not.toContain(CANARY);
          const logged = jsonLines(lines);
          for (const record of records) {
            const line = logged.find(
              (l) => l.message === 'work message handled' && l.message_id === record.messageId,
            );
            expect(line, `no line for ${record.messageId}`).toBeDefined();
            if (record === good) {
              expect(line).toMatchObject({ action: 'ack' });
            } else {
              expect(line).toMatchObject({ action: 'retry' });
              expect(POISON_CODES).toContain(line?.outcome_code);
            }
          }
          const refusals = logged.filter((l) => l.message === 'work message refused');
          expect(refusals).toHaveLength(bodies.length);
          for (const refusal of refusals) expect(POISON_CODES).toContain(refusal.outcome_code);
          expect(logged.filter((l) => l.level === 'ERROR')).toEqual([]);
        },
      ),
      { numRuns: runs(0.5) },
    );
  });

  it('stay refused on every redelivery: the fifth receive is refused like the first, and still nothing is recorded', async () => {
    await fc.assert(
      fc.asyncProperty(malformedArb, async (body) => {
        for (let receive = 1; receive <= 5; receive++) {
          const { result: failed } = await captureOutput(() =>
            executor.send([sqsRecord(body, `m-${receive}`, receive)]),
          );
          expect(failed).toEqual([`m-${receive}`]);
        }
        expect(await executor.recordCount()).toBe(0);
        expect(effect.starts).toHaveLength(0);
      }),
      { numRuns: runs(0.1) },
    );
  });
});
