import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { READ_SK } from '../../functions/contract/table';
import { IdempotencyConflictError, LedgerUnavailableError } from '../../functions/domain/errors';
import type { AnyTool } from '../../functions/domain/tool';
import { reconcilePass } from '../../functions/engine/reconcile';
import { freshTable, useDynalite } from '../support/dynalite';
import { injectFaults, throttling } from '../support/faults';
import { Gate, ScriptedTool, type TestLedger, testLedger } from '../support/harness';

const db = useDynalite();
let table: string;
let tool: ScriptedTool;

beforeEach(async () => {
  table = await freshTable(db.client);
  tool = new ScriptedTool('test.read', { effect: 'read' });
});

/** A client that counts every request it sends (each SDK attempt), by command. */
function countingClient(): { client: DynamoDBClient; calls: Record<string, number>; total(): number } {
  const client = db.newClient();
  const calls: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName ?? 'unknown';
      calls[name] = (calls[name] ?? 0) + 1;
      return next(args);
    },
    { step: 'deserialize', name: 'countCalls', priority: 'high' },
  );
  return { client, calls, total: () => Object.values(calls).reduce((a, b) => a + b, 0) };
}

function reader(t: AnyTool = tool.tool, client: DynamoDBClient = db.client): TestLedger {
  return testLedger(client, table, [t]);
}

async function readItems(): Promise<Record<string, unknown>[]> {
  const out = await db.client.send(new ScanCommand({ TableName: table }));
  return (out.Items ?? []).map((item) => unmarshall(item));
}

describe('the read-tool path', () => {
  it('repeated reads collapse to one execution and replay the first result', async () => {
    const ledger = reader();
    const first = await ledger.submit({ operationId: 'r-1', arguments: { target: 'a' } });
    expect(first).toMatchObject({ kind: 'completed', replayed: false });
    expect(first.record).toMatchObject({ state: 'succeeded', attempt: 1, operation_id: 'r-1' });
    for (let i = 0; i < 3; i++) {
      const again = await ledger.submit({ operationId: 'r-1', arguments: { target: 'a' } });
      expect(again).toMatchObject({ kind: 'completed', replayed: true });
      expect(again.record.result).toBe(first.record.result);
      expect(again.record.arguments_digest).toBe(first.record.arguments_digest);
    }
    expect(tool.starts).toHaveLength(1);
    expect(ledger.metrics.total('Replays')).toBeGreaterThan(0);
    expect((await readItems()).map((item) => item.sk)).toEqual([READ_SK]);
  });

  it('a warm local cache answers a repeated read with zero DynamoDB calls', async () => {
    const counted = countingClient();
    const ledger = reader(tool.tool, counted.client);
    await ledger.submit({ operationId: 'r-2', arguments: { target: 'a' } });
    // The read cache's PutItem and UpdateItem, and before the read runs, one GetItem of the ledger: an
    // operation reserved under this key (when the tool was a write) is replayed, never run as a read.
    expect(counted.calls).toEqual({ PutItemCommand: 1, GetItemCommand: 1, UpdateItemCommand: 1 });
    const before = counted.total();
    const again = await ledger.submit({ operationId: 'r-2', arguments: { target: 'a' } });
    expect(again).toMatchObject({ kind: 'completed', replayed: true });
    expect(counted.total() - before).toBe(0);
    expect(tool.starts).toHaveLength(1);
  });

  it('another process replays a persisted read from DynamoDB without running the tool', async () => {
    const first = await reader().submit({ operationId: 'r-3', arguments: { target: 'a' } });
    const counted = countingClient();
    const other = reader(tool.tool, counted.client);
    const replay = await other.submit({ operationId: 'r-3', arguments: { target: 'a' } });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
    expect(replay.record.result).toBe(first.record.result);
    expect(replay.record.created_at).toBe(first.record.created_at);
    // One conditional PutItem; dynalite drops ReturnValuesOnConditionCheckFailure, hence the GetItem.
    expect(counted.calls).toEqual({ PutItemCommand: 1, GetItemCommand: 1 });
    expect(tool.starts).toHaveLength(1);
  });

  it('the same ID with different arguments is a conflict and runs nothing, warm or cold', async () => {
    const ledger = reader();
    await ledger.submit({ operationId: 'r-4', arguments: { target: 'a' } });
    const warm = ledger.submit({ operationId: 'r-4', arguments: { target: 'b' } });
    await expect(warm).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(warm).rejects.toMatchObject({ code: 'idempotency_key_reused' });
    const cold = reader().submit({ operationId: 'r-4', arguments: { target: 'b' } });
    await expect(cold).rejects.toBeInstanceOf(IdempotencyConflictError);
    expect(tool.starts).toHaveLength(1);
    expect(ledger.metrics.total('Conflicts')).toBeGreaterThan(0);
  });

  it('a failing read is not stored: the next call runs it again', async () => {
    const ledger = reader();
    tool.next({ kind: 'throw' }, { kind: 'not_applied', code: 'connect_failed' });
    const crashed = await ledger.submit({ operationId: 'r-5', arguments: { target: 'a' } });
    expect(crashed.kind).toBe('retryable');
    expect(crashed.record).toMatchObject({ state: 'failed_retryable', outcome_code: 'unknown_error' });
    const refused = await ledger.submit({ operationId: 'r-5', arguments: { target: 'a' } });
    expect(refused.kind).toBe('retryable');
    expect(refused.record.outcome_code).toBe('connect_failed');
    const ok = await ledger.submit({ operationId: 'r-5', arguments: { target: 'a' } });
    expect(ok).toMatchObject({ kind: 'completed', replayed: false });
    expect(tool.starts).toHaveLength(3);
    expect(await readItems()).toHaveLength(1);
  });

  it('a refused read answers failed_terminal once and is not cached', async () => {
    const ledger = reader();
    tool.next({ kind: 'terminal', code: 'not_found', status: 404 });
    const refused = await ledger.submit({ operationId: 'r-6', arguments: { target: 'a' } });
    expect(refused).toMatchObject({ kind: 'completed', replayed: false });
    expect(refused.record).toMatchObject({ state: 'failed_terminal', outcome_code: 'not_found' });
    expect(refused.record.error).toMatchObject({ code: 'not_found', status: 404 });
    const later = await ledger.submit({ operationId: 'r-6', arguments: { target: 'a' } });
    expect(later.record.state).toBe('succeeded');
    expect(tool.starts).toHaveLength(2);
  });

  it('a read that outlives its deadline is aborted, retryable, and never uncertain', async () => {
    // The deadline counts from the request's start, so it must outlast the reservation on a busy
    // machine: with a few tens of ms the tool often never started (deadline_before_start).
    const slow = new ScriptedTool('test.slow_read', { effect: 'read', timeoutMs: 2_000 });
    slow.next({ kind: 'hang' });
    const ledger = reader(slow.tool);
    const out = await ledger.submit({ operationId: 'r-7', arguments: { target: 'a' } });
    expect(out.kind).toBe('retryable');
    expect(out.record).toMatchObject({ state: 'failed_retryable', outcome_code: 'timeout' });
    const again = await ledger.submit({ operationId: 'r-7', arguments: { target: 'a' } });
    expect(again).toMatchObject({ kind: 'completed', replayed: false });
    expect(slow.starts).toHaveLength(2);
  });

  it('a duplicate while the read runs is in_progress, and the read runs once', async () => {
    // The read runs until the gate opens: the duplicate always meets it running (a 40 ms sleep against
    // a 150 ms read did not, on a busy machine).
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const ledger = reader();
    const other = reader();
    const first = ledger.submit({ operationId: 'r-8', arguments: { target: 'a' } });
    await tool.started(1);
    const duplicate = await other.submit({ operationId: 'r-8', arguments: { target: 'a' } });
    expect(duplicate.kind).toBe('in_progress');
    expect(duplicate.record.state).toBe('pending');
    gate.open();
    expect(await first).toMatchObject({ kind: 'completed', replayed: false });
    expect(await other.submit({ operationId: 'r-8', arguments: { target: 'a' } })).toMatchObject({
      kind: 'completed',
      replayed: true,
    });
    expect(tool.starts).toHaveLength(1);
  });

  it('32 concurrent duplicates run the read once', async () => {
    tool.defaultBehaviour = { kind: 'succeed', delayMs: 20 };
    const ledgers = Array.from({ length: 32 }, () => reader());
    const results = await Promise.all(
      ledgers.map((l) => l.submit({ operationId: 'r-9', arguments: { target: 'a' } })),
    );
    expect(tool.starts).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'completed' && !r.replayed)).toHaveLength(1);
    expect(results.every((r) => r.kind === 'completed' || r.kind === 'in_progress')).toBe(true);
  });

  it('reads never touch the ledger: no operation record, in no GSI, invisible to the reconciler', async () => {
    const ledger = reader();
    await ledger.submit({ operationId: 'r-10', arguments: { target: 'a' } });
    expect(await ledger.store.get(operationKey('acme', 'r-10'))).toBeUndefined();
    const items = await readItems();
    expect(items).toHaveLength(1);
    const item = items[0] ?? {};
    expect(item.sk).toBe(READ_SK);
    expect(item.status).toBe('COMPLETED');
    expect(
      Object.keys(item).filter((k) => k.startsWith('attention_') || k.startsWith('unresolved_')),
    ).toEqual([]);
    // The tool's default cache lifetime is short: 60 s, in the table's TTL attribute.
    const nowSeconds = Date.now() / 1000;
    expect(item.expires_at).toBeGreaterThan(nowSeconds + 50);
    expect(item.expires_at).toBeLessThan(nowSeconds + 70);
    const pass = await reconcilePass(ledger.deps, ledger.req());
    expect(pass.read).toBe(0);
    expect((await ledger.store.listUnresolved('acme', { limit: 10 })).items).toEqual([]);
  });

  it('two tenants with the same operation ID read separately', async () => {
    const ledger = reader();
    const a = await ledger.submit({ operationId: 'r-11', arguments: { target: 'a' }, tenant: 'tenant-a' });
    const b = await ledger.submit({ operationId: 'r-11', arguments: { target: 'b' }, tenant: 'tenant-b' });
    expect(a).toMatchObject({ kind: 'completed', replayed: false });
    expect(b).toMatchObject({ kind: 'completed', replayed: false });
    expect(tool.starts).toHaveLength(2);
  });

  it('once its retention has passed, a result is gone and the ID reads afresh', async () => {
    const brief = new ScriptedTool('test.brief_read', { effect: 'read', retention: 1 });
    const ledger = reader(brief.tool);
    await ledger.submit({ operationId: 'r-12', arguments: { target: 'a' } });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const later = await reader(brief.tool).submit({ operationId: 'r-12', arguments: { target: 'b' } });
    expect(later).toMatchObject({ kind: 'completed', replayed: false });
    expect(brief.starts).toHaveLength(2);
  });

  it('an unreachable read cache is ledger_unavailable and runs nothing', async () => {
    const client = db.newClient({ maxAttempts: 1 });
    injectFaults(client, [{ command: 'PutItemCommand', when: 'before', times: 10, error: throttling }]);
    const attempt = reader(tool.tool, client).submit({ operationId: 'r-13', arguments: { target: 'a' } });
    await expect(attempt).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(tool.starts).toHaveLength(0);
  });

  it('a write tool with the same operation ID still takes the full ledger path', async () => {
    const write = new ScriptedTool('test.write');
    const ledger = testLedger(db.client, table, [tool.tool, write.tool]);
    await ledger.submit({ operationId: 'r-14', arguments: { target: 'a' }, tool: 'test.read' });
    const out = await ledger.submit({ operationId: 'r-14', arguments: { target: 'a' }, tool: 'test.write' });
    expect(out).toMatchObject({ kind: 'completed', replayed: false });
    expect((await ledger.store.get(operationKey('acme', 'r-14')))?.state).toBe('succeeded');
    expect(write.effects).toHaveLength(1);
  });
});
