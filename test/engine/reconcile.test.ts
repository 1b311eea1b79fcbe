import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { OperationRecord } from '../../functions/domain/operation';
import { createDeps } from '../../functions/engine/ledger-deps';
import { prepareCall } from '../../functions/engine/prepare-call';
import { reconcilePass } from '../../functions/engine/reconcile';
import { newLease, reserve } from '../../functions/engine/transitions';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { freshTable, useDynalite } from '../support/dynalite';
import { injectFaults, throttling } from '../support/faults';
import { drive, Gate, ScriptedTool, testLedger } from '../support/harness';

const db = useDynalite();
const A = { target: 'a' };

describe('reconciler', () => {
  it('a slow tool still running when its lease expires: marked uncertain, the late commit of the same attempt wins, nothing runs twice', async () => {
    // The tool runs until the test opens the gate (its real deadline, 20 s, is never reached; it still
    // fits a synchronous call), so the pass below always meets it running, however busy the machine.
    const tool = new ScriptedTool('test.slow', { timeoutMs: 20_000 });
    tool.reconcileVerdict = 'unknown';
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { leaseGraceMs: 100 });
    const gate = new Gate();
    tool.next({ kind: 'succeed', gate });
    const running = ledger.submit({ operationId: 'slow-1', arguments: A });
    await tool.started(1);
    ledger.advance(60_000); // the worker looks dead to the reconciler
    const pass = await reconcilePass(ledger.deps, ledger.req());
    expect(pass.actions).toMatchObject({ reconcile_unknown: 1 });
    expect((await ledger.store.get(operationKey('acme', 'slow-1')))?.state).toBe('uncertain');

    gate.open();
    const out = await running;
    expect(out).toMatchObject({ kind: 'completed', replayed: false });
    expect(out.record).toMatchObject({ state: 'succeeded', attempt: 1 });
    await drive(ledger);
    expect(tool.starts).toHaveLength(1);
    expect(tool.effects).toHaveLength(1);
  });

  it('an uncertain operation whose effect happened is reconciled to succeeded without running again', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'http_503' });
    expect((await ledger.submit({ operationId: 'u-1', arguments: A })).record.state).toBe('uncertain');
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'u-1'));
    expect(record).toMatchObject({ state: 'succeeded', reconciled: true, attempt: 1 });
    expect(record?.error).toBeUndefined(); // the uncertain attempt's http_503 does not linger
    expect(record?.expires_at).toBeDefined();
    expect(record?.attention_shard).toBeUndefined();
    expect(tool.starts).toHaveLength(1);
    const replay = await ledger.submit({ operationId: 'u-1', arguments: A });
    expect(replay).toMatchObject({ kind: 'completed', replayed: true });
  });

  it('an uncertain operation that did not apply is retried with the same key through the queue', async () => {
    // A lost outcome that did not apply. (A hanging tool with a 50 ms timeout made this depend on the
    // tool starting within 50 ms of its claim; on a busy machine it did not: deadline_before_start.)
    const tool = new ScriptedTool('test.t');
    tool.reconcileVerdict = 'not_applied';
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { leaseGraceMs: 10 });
    tool.next({ kind: 'uncertain', code: 'timeout', applied: false });
    expect((await ledger.submit({ operationId: 'u-2', arguments: A })).record.state).toBe('uncertain');
    tool.reconcileVerdict = undefined; // from now on, answer from the real effect log
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'u-2'));
    expect(record).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(tool.effects).toHaveLength(1);
  });

  it('unknown verdicts back off, then hand the operation to an operator', async () => {
    const tool = new ScriptedTool('test.t');
    tool.reconcileVerdict = 'unknown';
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { maxReconcileChecks: 3 });
    tool.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'u-3', arguments: A });
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'u-3'));
    expect(record).toMatchObject({ state: 'needs_reconciliation', outcome_code: 'reconcile_unknown' });
    expect(record?.attention_shard).toBeUndefined();
    expect(record?.unresolved_tenant).toBe('acme');
    expect(tool.starts).toHaveLength(1);
  });

  it('a tool without reconcile is retried only when downstream-idempotent for these arguments', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const idem = new ScriptedTool('test.idem', { reconcile: undefined, downstreamIdempotent: () => true });
    const ledger = testLedger(db.client, await freshTable(db.client), [plain.tool, idem.tool]);
    plain.next({ kind: 'uncertain', code: 'timeout' });
    idem.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'p', tool: 'test.plain', arguments: A });
    await ledger.submit({ operationId: 'i', tool: 'test.idem', arguments: A });
    await drive(ledger);
    expect((await ledger.store.get(operationKey('acme', 'p')))?.state).toBe('needs_reconciliation');
    const i = await ledger.store.get(operationKey('acme', 'i'));
    expect(i).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(plain.starts).toHaveLength(1);
  });

  it('a downstream-idempotent tool keeps retrying uncertain attempts with the same key until they run out, then goes to an operator, never failed_terminal', async () => {
    const idem = new ScriptedTool('test.idem', {
      reconcile: undefined,
      downstreamIdempotent: () => true,
      maxAttempts: 2,
    });
    idem.defaultBehaviour = { kind: 'uncertain', code: 'http_503' };
    const ledger = testLedger(db.client, await freshTable(db.client), [idem.tool]);
    await ledger.submit({ operationId: 'i-2', arguments: A });
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'i-2'));
    expect(record).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'attempts_exhausted_maybe_applied',
      attempt: 2,
      maybe_applied: true,
    });
    expect(record?.error?.message).toContain('may have applied');
    expect(idem.starts).toHaveLength(2);
  });

  it('an exhausted operation that was retried after an uncertain attempt goes to an operator and says the effect may have happened', async () => {
    const idem = new ScriptedTool('test.idem', {
      reconcile: undefined,
      downstreamIdempotent: () => true,
      maxAttempts: 2,
    });
    idem.next({ kind: 'uncertain', code: 'http_503' }, { kind: 'not_applied', code: 'dns_failure' });
    const ledger = testLedger(db.client, await freshTable(db.client), [idem.tool]);
    await ledger.submit({ operationId: 'i-3', arguments: A });
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'i-3'));
    expect(record).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'attempts_exhausted_maybe_applied',
      maybe_applied: true,
    });
    expect(record?.error?.message).toContain('may have applied');
  });

  it('a queued record whose messages keep getting lost is re-sent with exponential backoff', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { queuedStaleMs: 1_000 });
    await ledger.submit({ operationId: 'q-2', arguments: A, mode: 'async' });
    const dueTimes: number[] = [];
    for (let i = 0; i < 4; i++) {
      ledger.queue.messages.splice(0);
      const before = await ledger.store.get(operationKey('acme', 'q-2'));
      ledger.advance((before?.attention_at ?? 0) - ledger.deps.clock() + 1);
      // Measured from the pass's own "now": the test clock follows real time, which a busy machine
      // spends between the pass and a later read.
      const req = ledger.req();
      await reconcilePass(ledger.deps, req);
      const after = await ledger.store.get(operationKey('acme', 'q-2'));
      dueTimes.push((after?.attention_at ?? 0) - req.now);
      expect(after?.requeue_count).toBe(i + 1);
      expect(ledger.queue.messages).toHaveLength(1);
    }
    expect(dueTimes.map((d) => Math.round(d / 1000))).toEqual([1, 2, 4, 8]);
    expect(tool.starts).toHaveLength(0);
  });

  it('a queued operation whose message was lost is enqueued again with the same operation ID', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const out = await ledger.submit({ operationId: 'q-1', arguments: A, mode: 'async' });
    expect(out).toMatchObject({ kind: 'accepted' });
    expect(out.record.state).toBe('queued');
    ledger.queue.messages.splice(0); // lost
    await drive(ledger);
    expect((await ledger.store.get(operationKey('acme', 'q-1')))?.state).toBe('succeeded');
    expect(tool.effects).toHaveLength(1);
  });

  it('crash after reserve and before the effect: the lease expires, the target says not applied, the retry succeeds once', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const req = ledger.req();
    const call = prepareCall(ledger.deps.tools, 'c-1', 'test.t', A);
    await reserve(
      ledger.deps,
      req,
      call,
      { tenant: 'acme', principal: 'agent-1' },
      'pending',
      {
        execution: 'ledger',
        effect: 'write',
        requires_approval: false,
        downstream_idempotent: false,
        timeout_ms: 10_000,
      },
      newLease(ledger.deps, req, 10_000),
    );
    // …the worker dies here.
    await drive(ledger);
    expect(await ledger.store.get(operationKey('acme', 'c-1'))).toMatchObject({
      state: 'succeeded',
      attempt: 2,
    });
    expect(tool.effects).toHaveLength(1);
  });

  it('crash after the effect and before the commit: reconciled to succeeded, never run again', async () => {
    const tool = new ScriptedTool('test.t');
    const table = await freshTable(db.client);
    const dying = db.newClient({ maxAttempts: 1 });
    injectFaults(dying, [{ command: 'UpdateItemCommand', when: 'before', times: 100, error: throttling }]);
    const worker = testLedger(dying, table, [tool.tool]);
    expect((await worker.submit({ operationId: 'c-2', arguments: A })).record.state).toBe('pending');
    const ledger = testLedger(db.client, table, [tool.tool]);
    await drive(ledger);
    expect(await ledger.store.get(operationKey('acme', 'c-2'))).toMatchObject({
      state: 'succeeded',
      reconciled: true,
    });
    expect(tool.effects).toHaveLength(1);
  });

  it('two reconcilers over the same records at once act on every record exactly once', async () => {
    const tool = new ScriptedTool('test.t');
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    for (let i = 0; i < 10; i++) {
      tool.next({ kind: 'uncertain', code: 'timeout' });
      await ledger.submit({ operationId: `u-${i}`, arguments: A });
      await ledger.submit({ operationId: `q-${i}`, arguments: A, mode: 'async' });
      tool.next({ kind: 'not_applied', code: 'refused' });
      await ledger.submit({ operationId: `r-${i}`, arguments: A });
    }
    ledger.queue.messages.splice(0);
    ledger.advance(600_000);
    const second = createDeps({ ...ledger.deps, metrics: new MemoryLedgerMetrics(), workerId: 'other' });
    const [a, b] = await Promise.all([
      reconcilePass(ledger.deps, ledger.req()),
      reconcilePass(second, { requestId: 'r2', now: ledger.deps.clock() }),
    ]);
    const acted = (s: typeof a, key: string) => s.actions[key] ?? 0;
    expect(acted(a, 'reconciled_applied') + acted(b, 'reconciled_applied')).toBe(10);
    expect(acted(a, 'requeued') + acted(b, 'requeued')).toBe(20);
    const ids = ledger.queue.messages.map((m) => m.operation_id).sort();
    expect(new Set(ids).size).toBe(20);
    expect(ids).toHaveLength(20);
    expect(tool.starts).toHaveLength(20);
  });

  it('an approval past its deadline is rejected and a retry does not run the tool', async () => {
    const tool = new ScriptedTool('test.guarded', { requiresApproval: true });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], {
      approvalTtlSeconds: 60,
    });
    const out = await ledger.submit({ operationId: 'ap-1', arguments: A });
    expect(out.record.state).toBe('awaiting_approval');
    await drive(ledger);
    const record = await ledger.store.get(operationKey('acme', 'ap-1'));
    expect(record).toMatchObject({ state: 'rejected', outcome_code: 'approval_expired' });
    expect(await ledger.submit({ operationId: 'ap-1', arguments: A })).toMatchObject({
      kind: 'completed',
      replayed: true,
    });
    expect(tool.starts).toHaveLength(0);
  });

  it('with 10,000 terminal records and 20 unresolved ones, a pass reads only the unresolved ones', async () => {
    const tool = new ScriptedTool('test.t');
    tool.reconcileVerdict = 'unknown';
    const table = await freshTable(db.client);
    const ledger = testLedger(db.client, table, [tool.tool]);
    const doc = DynamoDBDocumentClient.from(db.client);
    const now = new Date().toISOString();
    const items: OperationRecord[] = Array.from({ length: 10_000 }, (_, i) => ({
      ...operationKey('acme', `done-${i}`),
      tenant: 'acme',
      operation_id: `done-${i}`,
      tool: 'test.t',
      arguments: '{"target":"a"}',
      arguments_digest: `v1:${'0'.repeat(64)}`,
      state: 'succeeded',
      attempt: 1,
      max_attempts: 3,
      retention_seconds: 86_400,
      requested_by: 'agent-1',
      reservation_id: `r-${i}`,
      created_at: now,
      updated_at: now,
      completed_at: now,
      expires_at: Math.floor(Date.now() / 1000) + 86_400,
      result: '{}',
    }));
    for (let i = 0; i < items.length; i += 25 * 8) {
      await Promise.all(
        Array.from({ length: 8 }, (_, k) => items.slice(i + k * 25, i + (k + 1) * 25))
          .filter((chunk) => chunk.length > 0)
          .map((chunk) =>
            doc.send(
              new BatchWriteCommand({
                RequestItems: { [table]: chunk.map((Item) => ({ PutRequest: { Item } })) },
              }),
            ),
          ),
      );
    }
    for (let i = 0; i < 20; i++) {
      tool.next({ kind: 'uncertain', code: 'timeout' });
      await ledger.submit({ operationId: `open-${i}`, arguments: A });
    }
    ledger.advance(1_000);
    const summary = await reconcilePass(ledger.deps, ledger.req());
    expect(summary.read).toBe(20);
    expect(summary.pages).toBe(ledger.deps.config.attentionShards);
  }, 120_000);
});
