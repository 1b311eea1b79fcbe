import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import {
  escalateToOperator,
  expireLease,
  reconcileNotApplied,
  resolveByOperator,
} from '../../functions/engine/transitions';
import { freshTable, useDynalite } from '../support/dynalite';
import { Gate, ScriptedTool, type TestLedger, testLedger } from '../support/harness';

/*
 * Every write is conditioned on the one state its record was read in (the store builds the new record
 * from it). An owner's known outcome and an operator's verdict used to be one write conditioned on
 * several states; now, when the record moved to one of those states in between, the write is made
 * again against what it is now, with the same attempt, lease owner or reservation in its condition.
 * Never against a terminal record, never for another attempt.
 */

const db = useDynalite();
const A = { target: 'a' };

async function current(ledger: TestLedger, id: string): Promise<OperationRecord> {
  const record = await ledger.store.get(operationKey('acme', id));
  if (!record) throw new Error(`no record ${id}`);
  return record;
}

/** A slow tool's call, held running at its gate, and its record as the reconciler would find it. */
async function running(id: string) {
  const tool = new ScriptedTool('test.slow', { timeoutMs: 20_000 });
  const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { leaseGraceMs: 100 });
  const gate = new Gate();
  tool.next({ kind: 'succeed', gate });
  const call = ledger.submit({ operationId: id, arguments: A });
  await tool.started(1);
  ledger.advance(60_000); // the worker looks dead
  return { tool, ledger, gate, call };
}

describe('a known outcome that finds its record moved', () => {
  it('lands against needs_reconciliation after two moves, and the record it returns is the one stored', async () => {
    const { tool, ledger, gate, call } = await running('late-1');
    const expired = await expireLease(ledger.deps, ledger.req(), await current(ledger, 'late-1'), tool.tool);
    expect(expired.ok && expired.record.state).toBe('uncertain');
    const escalated = await escalateToOperator(
      ledger.deps,
      ledger.req(),
      await current(ledger, 'late-1'),
      tool.tool,
      'reconcile_unknown',
    );
    expect(escalated.ok && escalated.record.state).toBe('needs_reconciliation');

    gate.open();
    const out = await call;
    expect(out.record).toMatchObject({ state: 'succeeded', attempt: 1, outcome_code: 'succeeded' });
    const stored = await current(ledger, 'late-1');
    expect(out.record).toEqual(stored);
    expect(stored.history?.map((h) => [h.from, h.to])).toEqual([
      [null, 'pending'],
      ['pending', 'uncertain'],
      ['uncertain', 'needs_reconciliation'],
      ['needs_reconciliation', 'succeeded'],
    ]);
    // The line names the move the write made, from the state it was conditioned on.
    expect(ledger.logs.at(-1)).toMatchObject({
      state_before: 'needs_reconciliation',
      state_after: 'succeeded',
    });
    expect(tool.effects).toHaveLength(1);
  });

  it('never overwrites a terminal record: an operator resolved it first, the late outcome changes nothing', async () => {
    const { tool, ledger, gate, call } = await running('late-2');
    await expireLease(ledger.deps, ledger.req(), await current(ledger, 'late-2'), tool.tool);
    const resolved = await resolveByOperator(
      ledger.deps,
      ledger.req(),
      await current(ledger, 'late-2'),
      tool.tool,
      {
        outcome: 'failed',
        principal: 'operator',
        attempt: 1,
      },
    );
    expect(resolved.ok && resolved.record.state).toBe('failed_terminal');
    const before = await current(ledger, 'late-2');

    gate.open();
    const out = await call;
    expect(out.record).toMatchObject({ state: 'failed_terminal', outcome_code: 'resolved_failed' });
    expect(await current(ledger, 'late-2')).toEqual(before);
  });

  it('is only noted once the record moved on to the next attempt', async () => {
    const { tool, ledger, gate, call } = await running('late-3');
    await expireLease(ledger.deps, ledger.req(), await current(ledger, 'late-3'), tool.tool);
    await reconcileNotApplied(
      ledger.deps,
      ledger.req(),
      await current(ledger, 'late-3'),
      tool.tool,
      'target_says_not_applied',
    );
    // Attempt 2 is claimed by another worker (its outcome is held too).
    const other = testLedger(db.client, ledger.store.tableName, [tool.tool]);
    const gate2 = new Gate();
    tool.next({ kind: 'succeed', gate: gate2 });
    const second = other.submit({ operationId: 'late-3', arguments: A });
    await tool.started(2);
    expect((await current(ledger, 'late-3')).attempt).toBe(2);

    gate.open();
    const out = await call;
    expect(out.record).toMatchObject({ state: 'pending', attempt: 2 });
    const noted = await current(ledger, 'late-3');
    expect(noted).toMatchObject({
      state: 'pending',
      attempt: 2,
      late_outcome: { attempt: 1, state: 'succeeded' },
    });
    gate2.open();
    expect((await second).record).toMatchObject({ state: 'succeeded', attempt: 2 });
  });
});

describe('an operator’s verdict that finds its record moved', () => {
  it('lands against needs_reconciliation when the reconciler gave up in between, same attempt and reservation', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'http_503' });
    await ledger.submit({ operationId: 'op-1', arguments: A });
    const seen = await current(ledger, 'op-1');
    expect(seen.state).toBe('uncertain');
    await escalateToOperator(ledger.deps, ledger.req(), seen, tool.tool, 'reconcile_unknown');

    const verdict = await resolveByOperator(ledger.deps, ledger.req(), seen, tool.tool, {
      outcome: 'applied',
      principal: 'operator',
      attempt: 1,
      result: '{"ok":true}',
    });
    expect(verdict.ok).toBe(true);
    const stored = await current(ledger, 'op-1');
    expect(stored).toMatchObject({
      state: 'succeeded',
      resolved_by: 'operator',
      outcome_code: 'resolved_applied',
    });
    expect(verdict.ok && verdict.record).toEqual(stored);
    expect(stored.history?.at(-1)).toMatchObject({ from: 'needs_reconciliation', to: 'succeeded' });
  });

  it('is refused when the attempt it names is no longer the record’s', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'http_503' });
    await ledger.submit({ operationId: 'op-2', arguments: A });
    const seen = await current(ledger, 'op-2');
    await escalateToOperator(ledger.deps, ledger.req(), seen, tool.tool, 'reconcile_unknown');
    const verdict = await resolveByOperator(ledger.deps, ledger.req(), seen, tool.tool, {
      outcome: 'applied',
      principal: 'operator',
      attempt: 2,
    });
    expect(verdict.ok).toBe(false);
    expect(await current(ledger, 'op-2')).toMatchObject({ state: 'needs_reconciliation', attempt: 1 });
  });
});
