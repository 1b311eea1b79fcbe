import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import type { LedgerDeps } from '../../functions/engine/ledger-deps';
import type { OperationStore } from '../../functions/engine/operation-store';
import { type Lease, recordOutcome } from '../../functions/engine/transitions';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

/*
 * A worker whose attempt was superseded reports its outcome late; the ledger keeps it as
 * `late_outcome`. That annotation is read from one record and written later, like every decision, so
 * it is bound to the state it read and to the reservation the attempt ran under: it never lands on a
 * new operation that reused the expired key, and a record that moved in between is read again.
 */

const db = useDynalite();

/** Leaves `late-1` as a superseded attempt 1 would find it: returns the attempt's own view and lease. */
async function supersededAttempt(ledger: TestLedger, tool: ScriptedTool) {
  tool.next({ kind: 'uncertain', code: 'timeout' });
  await ledger.submit({ operationId: 'late-1', arguments: { target: 'a' } });
  const read = (await ledger.store.get(operationKey('acme', 'late-1'))) as OperationRecord;
  expect(read).toMatchObject({ state: 'uncertain', attempt: 1 });
  const lease: Lease = {
    owner: read.lease_owner as string,
    deadline: Date.now(),
    expiresAt: read.lease_expires_at as number,
  };
  return { attemptRecord: { ...read, state: 'pending' as const }, lease, read };
}

async function put(ledger: TestLedger, item: OperationRecord): Promise<void> {
  const doc = DynamoDBDocumentClient.from(db.client);
  await doc.send(new PutCommand({ TableName: ledger.store.tableName, Item: item }));
}

const lateSuccess = { state: 'succeeded', outcomeCode: 'ok', result: '{"ok":true}', durationMs: 5 } as const;

describe('a late outcome is bound to the record it read', () => {
  it('a superseded attempt never annotates a new operation that reused the expired key', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const { attemptRecord, lease, read } = await supersededAttempt(ledger, tool);
    // A new operation reserved the key after the old one ended and expired, and is now at attempt 2.
    await put(ledger, {
      ...read,
      reservation_id: 'a-new-reservation',
      state: 'pending',
      attempt: 2,
      lease_owner: 'another-worker',
    });

    await recordOutcome(ledger.deps, ledger.req(), attemptRecord, tool.tool, lease, lateSuccess);

    const now = await ledger.store.get(operationKey('acme', 'late-1'));
    expect(now).toMatchObject({ reservation_id: 'a-new-reservation', state: 'pending', attempt: 2 });
    expect(now?.late_outcome).toBeUndefined();
    // The outcome is still told: counted, and logged as not recorded on any record.
    expect(ledger.metrics.total('LateOutcomes')).toBe(1);
    expect(ledger.logs.at(-1)).toMatchObject({ outcome_code: 'late_outcome_unrecorded:succeeded' });
  });

  it('an annotation whose record moved in between is refused, read again, and lands on what it read', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const { attemptRecord, lease, read } = await supersededAttempt(ledger, tool);
    // Attempt 2 of the same operation holds the record.
    const attempt2: OperationRecord = {
      ...read,
      state: 'pending',
      attempt: 2,
      lease_owner: 'another-worker',
    };
    await put(ledger, attempt2);

    // Between the read that found attempt 2 pending and the annotation, attempt 2 commits.
    const landed: unknown[] = [];
    let moved = false;
    const store: OperationStore = Object.create(ledger.store);
    store.annotateLateOutcome = async (...args: Parameters<OperationStore['annotateLateOutcome']>) => {
      if (!moved) {
        moved = true;
        await put(ledger, { ...attempt2, state: 'succeeded', outcome_code: 'ok' });
      }
      const result = await ledger.store.annotateLateOutcome(...args);
      landed.push(result);
      return result;
    };
    const deps: LedgerDeps = { ...ledger.deps, store };

    await recordOutcome(deps, ledger.req(), attemptRecord, tool.tool, lease, lateSuccess);

    // The write conditioned on `pending` did not land on the `succeeded` record; the second one did.
    expect(landed).toHaveLength(2);
    expect(landed[0]).toMatchObject({ ok: false, current: { state: 'succeeded' } });
    expect(landed[1]).toMatchObject({ ok: true });
    const now = await ledger.store.get(operationKey('acme', 'late-1'));
    expect(now).toMatchObject({
      state: 'succeeded',
      attempt: 2,
      late_outcome: { attempt: 1, state: 'succeeded' },
    });
    expect(ledger.logs.at(-1)).toMatchObject({
      outcome_code: 'late_outcome:succeeded',
      state_before: 'succeeded',
      state_after: 'succeeded',
    });
  });

  it('a late outcome on the record it read is stored', async () => {
    const tool = new ScriptedTool('test.effect');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const { attemptRecord, lease, read } = await supersededAttempt(ledger, tool);
    await put(ledger, { ...read, state: 'pending', attempt: 2, lease_owner: 'another-worker' });

    await recordOutcome(ledger.deps, ledger.req(), attemptRecord, tool.tool, lease, lateSuccess);

    const now = await ledger.store.get(operationKey('acme', 'late-1'));
    expect(now).toMatchObject({
      state: 'pending',
      attempt: 2,
      late_outcome: { attempt: 1, state: 'succeeded' },
    });
    expect(ledger.logs.at(-1)).toMatchObject({ outcome_code: 'late_outcome:succeeded' });
  });
});
