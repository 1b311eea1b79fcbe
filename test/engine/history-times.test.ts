import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { freshTable, useDynalite } from '../support/dynalite';
import { Gate, ScriptedTool, testLedger } from '../support/harness';

/**
 * Each history entry carries the time of its own transition: an attempt that ends later than it began
 * records its outcome at the end, not at the start of the request that ran it.
 */

const db = useDynalite();

describe('history times', () => {
  it('an attempt’s outcome is entered at the time it ended, its start at the time it began', async () => {
    const tool = new ScriptedTool('test.slow');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const began = ledger.deps.clock();
    const running = ledger.submit({ operationId: 'slow-1', arguments: { target: 'x' } });
    await tool.started(1);
    ledger.advance(90_000); // the attempt takes a minute and a half
    gate.open();
    const out = await running;
    expect(out.record.state).toBe('succeeded');
    const record = await ledger.store.get(operationKey('acme', 'slow-1'));
    const [start, end] = record?.history ?? [];
    expect([start?.to, end?.to]).toEqual(['pending', 'succeeded']);
    const startedAt = Date.parse(start?.at ?? '');
    const endedAt = Date.parse(end?.at ?? '');
    expect(startedAt).toBeGreaterThanOrEqual(began);
    expect(startedAt).toBeLessThan(began + 90_000);
    expect(endedAt).toBeGreaterThanOrEqual(began + 90_000);
    expect(end?.at).toBe(record?.updated_at);
  });
});
