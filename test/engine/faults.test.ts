import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { LedgerUnavailableError } from '../../functions/domain/errors';
import { freshTable, useDynalite } from '../support/dynalite';
import { injectFaults, lostResponse, throttling } from '../support/faults';
import { ScriptedTool, testLedger } from '../support/harness';

const db = useDynalite();
async function faultyLedger(plans: Parameters<typeof injectFaults>[1], maxAttempts = 3) {
  const table = await freshTable(db.client);
  const client = db.newClient({ maxAttempts });
  const faults = injectFaults(client, plans);
  const tool = new ScriptedTool();
  const ledger = testLedger(client, table, [tool.tool]);
  const clean = testLedger(db.client, table, [tool.tool]);
  return { tool, ledger, clean, faults };
}

describe('DynamoDB faults', () => {
  it('throttling on reserve that the SDK retries through runs the effect once', async () => {
    const { tool, ledger, faults } = await faultyLedger([
      { command: 'PutItemCommand', when: 'before', times: 2, error: throttling },
    ]);
    const out = await ledger.submit({ operationId: 'op-1', arguments: { target: 'a' } });
    expect(out.record.state).toBe('succeeded');
    expect(faults.injected).toBe(2);
    expect(tool.effects).toHaveLength(1);
  });

  it('throttling beyond retries on reserve is ledger_unavailable: no record, no effect, the key is not consumed', async () => {
    const { tool, ledger, clean } = await faultyLedger([
      { command: 'PutItemCommand', when: 'before', times: 100, error: throttling },
    ]);
    const attempt = ledger.submit({ operationId: 'op-2', arguments: { target: 'a' } });
    await expect(attempt).rejects.toBeInstanceOf(LedgerUnavailableError);
    await expect(attempt).rejects.toMatchObject({ code: 'ledger_unavailable' });
    expect(tool.starts).toHaveLength(0);
    expect(await clean.store.get(operationKey('acme', 'op-2'))).toBeUndefined();
    const later = await clean.submit({ operationId: 'op-2', arguments: { target: 'a' } });
    expect(later).toMatchObject({ kind: 'completed', replayed: false });
  });

  it('a lost commit response retried by the SDK is verified by reading back: one effect, outcome kept', async () => {
    const { tool, ledger, clean } = await faultyLedger([
      { command: 'UpdateItemCommand', when: 'after', times: 1, error: lostResponse },
    ]);
    const out = await ledger.submit({ operationId: 'op-3', arguments: { target: 'a' } });
    expect(out).toMatchObject({ kind: 'completed', replayed: false });
    expect(out.record.state).toBe('succeeded');
    const replay = await clean.submit({ operationId: 'op-3', arguments: { target: 'a' } });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(replay.record.result).toBe(out.record.result);
    expect(tool.effects).toHaveLength(1);
    // The commit is one transition even though its response was lost: logged exactly once.
    const commits = ledger.logs.filter((l) => l.state_before === 'pending' && l.state_after === 'succeeded');
    expect(commits).toHaveLength(1);
  });

  it('a lost commit response with SDK retries off is retried by the engine with the same condition', async () => {
    const { tool, ledger, faults } = await faultyLedger(
      [{ command: 'UpdateItemCommand', when: 'after', times: 2, error: lostResponse }],
      1,
    );
    const out = await ledger.submit({ operationId: 'op-4', arguments: { target: 'a' } });
    expect(out.record).toMatchObject({ state: 'succeeded', attempt: 1 });
    // The first write landed and its response was lost; the engine's retry met its own write
    // (condition failed) and verified it by reading back `outcome_by`.
    expect(faults.sent.UpdateItemCommand).toBe(2);
    expect(faults.sent.GetItemCommand).toBeGreaterThanOrEqual(1);
    expect(tool.effects).toHaveLength(1);
  });

  it('a commit that never becomes durable leaves the record pending under its lease, never runs again', async () => {
    const { tool, ledger, clean } = await faultyLedger(
      [{ command: 'UpdateItemCommand', when: 'before', times: 100, error: throttling }],
      1,
    );
    const out = await ledger.submit({ operationId: 'op-5', arguments: { target: 'a' } });
    expect(out.kind).toBe('accepted');
    const stored = await clean.store.get(operationKey('acme', 'op-5'));
    expect(stored?.state).toBe('pending');
    const retry = await clean.submit({ operationId: 'op-5', arguments: { target: 'a' } });
    expect(retry.kind).toBe('in_progress');
    expect(tool.effects).toHaveLength(1);
  });

  it('a timeout on the fallback read of a replay is a clear error and runs nothing', async () => {
    const { tool, clean } = await faultyLedger([]);
    await clean.submit({ operationId: 'op-6', arguments: { target: 'a' } });
    const client = db.newClient();
    injectFaults(client, [{ command: 'GetItemCommand', when: 'before', times: 100, error: lostResponse }]);
    const faulty = testLedger(client, clean.deps.config.tableName, [tool.tool]);
    const attempt = faulty.submit({ operationId: 'op-6', arguments: { target: 'a' } });
    await expect(attempt).rejects.toMatchObject({ code: 'ledger_unavailable' });
    expect(tool.effects).toHaveLength(1);
  });
});
