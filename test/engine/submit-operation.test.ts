import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { IdempotencyConflictError, LedgerError } from '../../functions/domain/errors';
import { TRANSITION_LOG_FIELDS } from '../../functions/observability/transition-log';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

const db = useDynalite();
let tool: ScriptedTool;
let ledger: TestLedger;

beforeEach(async () => {
  tool = new ScriptedTool();
  ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
});

describe('the seed contract', () => {
  it('same ID and same arguments replays the original result with replayed: true and runs nothing', async () => {
    const first = await ledger.submit({ operationId: 'op-1', arguments: { target: 'a' } });
    expect(first.kind).toBe('completed');
    expect(first.record.state).toBe('succeeded');
    expect(first.kind === 'completed' && first.replayed).toBe(false);

    const again = await ledger.submit({ operationId: 'op-1', arguments: { target: 'a' } });
    expect(again.kind).toBe('completed');
    expect(again.kind === 'completed' && again.replayed).toBe(true);
    expect(again.record.result).toBe(first.record.result);
    expect(tool.effects).toHaveLength(1);
  });

  it('same ID with different arguments is rejected as a conflict and runs nothing', async () => {
    await ledger.submit({ operationId: 'op-1', arguments: { target: 'a' } });
    const conflict = ledger.submit({ operationId: 'op-1', arguments: { target: 'b' } });
    await expect(conflict).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(conflict).rejects.toMatchObject({ code: 'idempotency_key_reused' });
    expect(tool.starts).toHaveLength(1);
    expect(ledger.metrics.total('Conflicts')).toBe(1);
  });

  it('a timeout after the effect leaves the operation uncertain and a retry does not run the tool', async () => {
    // The deadline counts from the request's start, so it must outlast the reservation on a busy
    // machine: with a few tens of ms the tool often never started (deadline_before_start).
    const slow = new ScriptedTool('test.slow', { timeoutMs: 2_000 });
    const l = testLedger(db.client, await freshTable(db.client), [slow.tool]);
    slow.next({ kind: 'apply_then_hang' });
    const first = await l.submit({ operationId: 'op-t', arguments: { target: 'a' } });
    expect(first.kind).toBe('accepted');
    expect(first.record.state).toBe('uncertain');
    expect(first.record.outcome_code).toBe('timeout');

    const retry = await l.submit({ operationId: 'op-t', arguments: { target: 'a' } });
    expect(retry.kind).toBe('accepted');
    expect(retry.record.state).toBe('uncertain');
    expect(slow.starts).toHaveLength(1);
    expect(slow.effects).toHaveLength(1);
  });
});

describe('identity and isolation', () => {
  it('two tenants with the same operation ID get separate records and never see each other', async () => {
    const a = await ledger.submit({ operationId: 'shared', arguments: { target: 'a' }, tenant: 'tenant-a' });
    const b = await ledger.submit({ operationId: 'shared', arguments: { target: 'b' }, tenant: 'tenant-b' });
    expect(a.kind === 'completed' && a.replayed).toBe(false);
    expect(b.kind === 'completed' && b.replayed).toBe(false);
    expect(JSON.parse(a.record.result ?? 'null')).toMatchObject({ target: 'a' });
    expect(JSON.parse(b.record.result ?? 'null')).toMatchObject({ target: 'b' });
    expect(tool.effects).toHaveLength(2);
    const stored = await ledger.store.get(operationKey('tenant-a', 'shared'));
    expect(stored?.tenant).toBe('tenant-a');
  });

  it('validation failures create no record and do not consume the key', async () => {
    const cases: [unknown, unknown, unknown, string][] = [
      ['bad key', 'test.effect', { target: 'a' }, 'idempotency_key_invalid'],
      ['', 'test.effect', { target: 'a' }, 'idempotency_key_missing'],
      ['x'.repeat(256), 'test.effect', { target: 'a' }, 'idempotency_key_invalid'],
      ['op-v', 'test.nope', { target: 'a' }, 'tool_unknown'],
      ['op-v', 'test.effect', { target: 1 }, 'validation_failed'],
      ['op-v', 'test.effect', { target: 'a', extra: true }, 'validation_failed'],
      ['op-v', 'test.effect', [], 'validation_failed'],
      ['op-v', 'test.effect', { target: 'a', value: -0 }, 'validation_failed'],
    ];
    for (const [operationId, toolName, args, code] of cases) {
      const attempt = ledger.submit({ operationId, tool: toolName, arguments: args });
      await expect(attempt).rejects.toBeInstanceOf(LedgerError);
      await expect(attempt).rejects.toMatchObject({ code });
    }
    expect(await ledger.store.get(operationKey('acme', 'op-v'))).toBeUndefined();
    const ok = await ledger.submit({ operationId: 'op-v', arguments: { target: 'a' } });
    expect(ok.record.state).toBe('succeeded');
    expect(ok.kind === 'completed' && ok.replayed).toBe(false);
    expect(tool.effects).toHaveLength(1);
    expect(await ledger.submit({ operationId: 'x'.repeat(255), arguments: { target: 'a' } })).toMatchObject({
      kind: 'completed',
    });
  });
});

describe('concurrency', () => {
  // 2,000 calls, CPU-bound: with both cores taken by other work this took over 3 minutes (it
  // failed at the default 30 s). The bound is only a hang detector.
  it('100 concurrent calls with one operation ID, 20 times: exactly one execution, no errors', {
    timeout: 600_000,
  }, async () => {
    tool.defaultBehaviour = { kind: 'succeed', delayMs: 5 };
    for (let round = 0; round < 20; round++) {
      const id = `burst-${round}`;
      const results = await Promise.allSettled(
        Array.from({ length: 100 }, () => ledger.submit({ operationId: id, arguments: { target: 'a' } })),
      );
      const rejected = results.filter((r) => r.status === 'rejected');
      expect(rejected).toEqual([]);
      const kinds = results.map((r) => (r.status === 'fulfilled' ? r.value.kind : 'error'));
      expect(kinds.every((k) => k === 'completed' || k === 'in_progress')).toBe(true);
      expect(tool.effectsOf(id)).toBe(1);
      const firsts = results.filter(
        (r) => r.status === 'fulfilled' && r.value.kind === 'completed' && !r.value.replayed,
      );
      expect(firsts).toHaveLength(1);
    }
  });
});

describe('failures', () => {
  it('a terminal failure is stored and replayed, not deleted', async () => {
    tool.next({ kind: 'terminal', code: 'http_404', status: 404 });
    const first = await ledger.submit({ operationId: 'op-f', arguments: { target: 'a' } });
    expect(first).toMatchObject({ kind: 'completed', replayed: false });
    expect(first.record.state).toBe('failed_terminal');
    expect(first.record.error).toMatchObject({ code: 'http_404', status: 404 });
    expect(first.record.expires_at).toBeGreaterThan(Date.now() / 1000);
    const again = await ledger.submit({ operationId: 'op-f', arguments: { target: 'a' } });
    expect(again).toMatchObject({ kind: 'completed', replayed: true });
    expect(again.record.error).toEqual(first.record.error);
    expect(tool.starts).toHaveLength(1);
  });

  it('a not-applied failure becomes failed_retryable and the next call with the same key runs attempt 2', async () => {
    tool.next({ kind: 'not_applied', code: 'connection_refused' });
    const first = await ledger.submit({ operationId: 'op-r', arguments: { target: 'a' } });
    expect(first.kind).toBe('retryable');
    expect(first.record).toMatchObject({ state: 'failed_retryable', attempt: 1 });
    const second = await ledger.submit({ operationId: 'op-r', arguments: { target: 'a' } });
    expect(second).toMatchObject({ kind: 'completed', replayed: false });
    expect(second.record).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(tool.starts.map((s) => s.attempt)).toEqual([1, 2]);
  });

  it('attempts are bounded: after max_attempts not-applied failures the operation ends failed_terminal', async () => {
    tool.next(
      { kind: 'not_applied', code: 'dns' },
      { kind: 'not_applied', code: 'dns' },
      { kind: 'not_applied', code: 'dns' },
    );
    for (let i = 0; i < 3; i++) {
      expect((await ledger.submit({ operationId: 'op-x', arguments: { target: 'a' } })).kind).toBe(
        'retryable',
      );
    }
    const last = await ledger.submit({ operationId: 'op-x', arguments: { target: 'a' } });
    expect(last.record).toMatchObject({
      state: 'failed_terminal',
      outcome_code: 'attempts_exhausted',
      attempt: 3,
    });
    expect(tool.starts).toHaveLength(3);
  });

  it('a retry that finds the attempts used up after an attempt that may have applied hands the operation to an operator, never failed_terminal', async () => {
    const idem = new ScriptedTool('test.idem', {
      reconcile: undefined,
      downstreamIdempotent: () => true,
      maxAttempts: 2,
    });
    const l = testLedger(db.client, await freshTable(db.client), [idem.tool]);
    idem.next({ kind: 'uncertain', code: 'http_503' }, { kind: 'not_applied', code: 'dns' });
    expect((await l.submit({ operationId: 'op-m', arguments: { target: 'a' } })).record.state).toBe(
      'uncertain',
    );
    // The reconciler cannot ask the target but it dedupes: the next attempt may run, same key.
    const { reconcilePass } = await import('../../functions/engine/reconcile');
    l.advance(120_000);
    await reconcilePass(l.deps, l.req());
    l.queue.messages.splice(0);
    expect((await l.submit({ operationId: 'op-m', arguments: { target: 'a' } })).record).toMatchObject({
      state: 'failed_retryable',
      attempt: 2,
      maybe_applied: true,
    });
    const last = await l.submit({ operationId: 'op-m', arguments: { target: 'a' } });
    expect(last.record).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'attempts_exhausted_maybe_applied',
      attempt: 2,
    });
    expect(idem.starts).toHaveLength(2);
  });

  it('lease expiry alone never causes a second execution', async () => {
    // The deadline counts from the request's start, so it must outlast the reservation on a busy
    // machine: with a few tens of ms the tool often never started (deadline_before_start).
    const slow = new ScriptedTool('test.slow', { timeoutMs: 2_000 });
    const l = testLedger(db.client, await freshTable(db.client), [slow.tool], { leaseGraceMs: 10 });
    slow.next({ kind: 'hang' });
    const first = await l.submit({ operationId: 'op-l', arguments: { target: 'a' } });
    expect(first.record.state).toBe('uncertain');
    l.advance(60_000);
    for (let i = 0; i < 5; i++) {
      const again = await l.submit({ operationId: 'op-l', arguments: { target: 'a' } });
      expect(again.kind).toBe('accepted');
    }
    expect(slow.starts).toHaveLength(1);
  });

  it('an unknown thrown error is uncertain and its message (which may carry values) is never stored', async () => {
    tool.next({ kind: 'throw' });
    const first = await ledger.submit({ operationId: 'op-u', arguments: { target: 'canary-value-123' } });
    expect(first.record.state).toBe('uncertain');
    expect(JSON.stringify(first.record.error)).not.toContain('canary-value-123');
  });
});

describe('expiry', () => {
  it('a terminal record whose retention has passed is treated as absent: the key starts a new operation', async () => {
    const short = new ScriptedTool('test.short', { retention: 60 });
    const l = testLedger(db.client, await freshTable(db.client), [short.tool]);
    await l.submit({ operationId: 'op-e', arguments: { target: 'a' } });
    l.advance(61_000);
    const again = await l.submit({ operationId: 'op-e', arguments: { target: 'b' } });
    expect(again).toMatchObject({ kind: 'completed', replayed: false });
    expect(short.effects).toHaveLength(2);
  });
});

describe('logs', () => {
  it('one line per transition with exactly the SPEC §9 fields and the tenant, and no argument values', async () => {
    tool.next({ kind: 'succeed', result: { secret: 'result-canary-456' } });
    await ledger.submit({
      operationId: 'op-log',
      arguments: { target: 'arg-canary-789' },
      agentRunId: 'run-1',
    });
    await ledger.submit({
      operationId: 'op-log',
      arguments: { target: 'arg-canary-789' },
      agentRunId: 'run-1',
    });
    const text = JSON.stringify(ledger.logs);
    expect(text).not.toContain('arg-canary-789');
    expect(text).not.toContain('result-canary-456');
    const transitions = ledger.logs.filter((l) => l.state_before !== l.state_after);
    expect(transitions.map((l) => [l.state_before, l.state_after])).toEqual([
      [null, 'pending'],
      ['pending', 'succeeded'],
    ]);
    expect(Object.keys(transitions[0] ?? {}).sort()).toEqual([...TRANSITION_LOG_FIELDS].sort());
    expect(ledger.logs.at(-1)).toMatchObject({ replayed: true, agent_run_id: 'run-1' });
    expect(ledger.logs.map((l) => l.tenant)).toEqual(ledger.logs.map(() => 'acme'));
  });
});
