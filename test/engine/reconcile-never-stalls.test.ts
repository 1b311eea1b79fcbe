import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { LEDGER_METRICS } from '../../functions/contract/metrics';
import type { AnyTool } from '../../functions/domain/tool';
import { newRequest } from '../../functions/engine/ledger-deps';
import { reconcilePass } from '../../functions/engine/reconcile';
import { submitOperation } from '../../functions/engine/submit-operation';
import { invocationContext } from '../../functions/local/lambda-context';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { createReconcilerHandler } from '../../functions/reconciler/reconciler-handler';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/**
 * A reconciler pass never stalls on one record (the contract, §7). A tool whose `reconcile` is slow
 * shares the attention index with fast ones, across shards and tenants; the scheduled handler runs in a
 * 60 s invocation whose remaining time each `reconcile` call spends as a real one would (no test waits
 * on the clock). Every fast operation must settle within two passes, the slow ones must settle too
 * (deferred with backoff, never first in line again), and what a pass could not do must show.
 */

const db = useDynalite();
const TENANTS = ['acme', 'globex', 'initech'];
const INVOCATION_MS = 60_000;

/** A controllable invocation: `remaining` is what `getRemainingTimeInMillis` answers. */
class Invocation {
  remaining = INVOCATION_MS;
  context(): Context {
    this.remaining = INVOCATION_MS;
    return {
      ...invocationContext({ name: 'reconciler', timeoutMs: INVOCATION_MS }),
      getRemainingTimeInMillis: () => this.remaining,
    };
  }
}

/**
 * A tool whose reconcile costs the invocation `costMs` and finds the effect applied. Its `reconcile`
 * deadline is its `timeoutMs`, as for a tool that sets no `reconcileTimeoutMs`.
 */
function checkedTool(name: string, timeoutMs: number, costMs: number, invocation: Invocation) {
  const asked: string[] = [];
  const scripted = new ScriptedTool(name, {
    timeoutMs,
    reconcile: async (_args, ctx) => {
      invocation.remaining -= costMs;
      await new Promise((resolve) => setImmediate(resolve));
      asked.push(`${ctx.tenant}/${ctx.operationId}`);
      return { status: 'applied', result: { checked: true } };
    },
  });
  return { scripted, asked };
}

async function setup(
  tools: AnyTool[],
): Promise<{ runtime: Runtime; metrics: MemoryLedgerMetrics; advance: (ms: number) => void }> {
  const runtime = buildRuntime(() => tools, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
    TOOL_LEDGER_ATTENTION_SHARDS: '4',
    // Long tools still run synchronously here, so each test starts from uncertain records at once.
    TOOL_LEDGER_SYNC_WAIT_MS: '120000',
  });
  const metrics = new MemoryLedgerMetrics();
  let offset = 0;
  runtime.deps.metrics = metrics;
  runtime.deps.log = () => undefined;
  runtime.deps.clock = () => Date.now() + offset;
  return { runtime, metrics, advance: (ms) => (offset += ms) };
}

async function uncertain(runtime: Runtime, tool: ScriptedTool, tenant: string, operationId: string) {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const result = await submitOperation(runtime.deps, newRequest(runtime.deps), {
    tenant,
    principal: `${tenant}-agent`,
    operationId,
    tool: tool.tool.name,
    arguments: { target: operationId },
    mode: 'sync',
  });
  expect(result.record.state).toBe('uncertain');
}

async function stateOf(runtime: Runtime, tenant: string, id: string) {
  return (await runtime.deps.store.get(operationKey(tenant, id)))?.state;
}

describe('a reconciler pass never stalls on a slow reconcile', () => {
  it('settles every fast operation within two passes while slow ones share the shards and tenants', async () => {
    const invocation = new Invocation();
    // 40 s checks fit a 60 s pass one at a time (the construct accepts them); 50 ms checks are fast.
    const slow = checkedTool('test.slow', 40_000, 40_000, invocation);
    const fast = checkedTool('test.fast', 1_000, 50, invocation);
    const { runtime, metrics, advance } = await setup([slow.scripted.tool, fast.scripted.tool]);
    const fastIds: [string, string][] = [];
    const slowIds: [string, string][] = [];
    for (const tenant of TENANTS) {
      for (let i = 0; i < 3; i++) {
        // Slow ones first: they are the oldest due records, first in every shard they land in.
        await uncertain(runtime, slow.scripted, tenant, `slow-${i}`);
        slowIds.push([tenant, `slow-${i}`]);
      }
      for (let i = 0; i < 8; i++) {
        await uncertain(runtime, fast.scripted, tenant, `fast-${i}`);
        fastIds.push([tenant, `fast-${i}`]);
      }
    }
    // Fast records in every shard, behind slow ones.
    const shardsOfFast = new Set(
      await Promise.all(
        fastIds.map(async ([t, id]) => (await runtime.deps.store.get(operationKey(t, id)))?.attention_shard),
      ),
    );
    expect(shardsOfFast.size).toBe(4);

    const handler = createReconcilerHandler(() => runtime);
    advance(1_000);
    const first = await handler({}, invocation.context());
    advance(60_000);
    const second = await handler({}, invocation.context());

    const fastStates = await Promise.all(fastIds.map(([t, id]) => stateOf(runtime, t, id)));
    expect(fastStates).toEqual(fastIds.map(() => 'succeeded'));
    // The slow checks that did not fit were deferred, not the end of the pass.
    expect(first.deferred).toBeGreaterThan(0);
    expect(first.actions.deferred_for_time).toBe(first.deferred);
    // Each pass ended within its share of the invocation: 80 % of 60 s, so the near-timeout alarm
    // (90 %) does not mistake a busy pass for a handler about to be cut off.
    for (const summary of [first, second]) expect(summary.complete).toBe(true);
    expect(invocation.remaining).toBeGreaterThanOrEqual(INVOCATION_MS * 0.2);

    // The slow ones settle too, a pass at a time, each deferred one behind the records due before it.
    let passes = 2;
    while (
      (await Promise.all(slowIds.map(([t, id]) => stateOf(runtime, t, id)))).some((s) => s !== 'succeeded')
    ) {
      passes += 1;
      expect(passes).toBeLessThanOrEqual(slowIds.length + 2);
      advance(60 * 60_000);
      await handler({}, invocation.context());
    }
    // Nothing was asked twice, nothing ran again.
    expect(slow.asked).toHaveLength(slowIds.length);
    expect(new Set(fast.asked).size).toBe(fastIds.length);
    expect(fast.asked).toHaveLength(fastIds.length);
    expect(slow.scripted.starts).toHaveLength(slowIds.length);
    // Every scheduled pass said how much it saw and whether it reached it all.
    expect(metrics.counts.get(LEDGER_METRICS.incompletePasses)).toBe(0);
  });

  it('hands to an operator a record whose check could never fit a pass, and settles the rest', async () => {
    const invocation = new Invocation();
    // 70 s: longer than any 60 s pass (the construct refuses this tool at synth; local mode could run it).
    const tooSlow = checkedTool('test.too_slow', 70_000, 70_000, invocation);
    const fast = checkedTool('test.fast', 1_000, 50, invocation);
    const { runtime, advance } = await setup([tooSlow.scripted.tool, fast.scripted.tool]);
    for (const tenant of TENANTS) await uncertain(runtime, tooSlow.scripted, tenant, 'too-slow');
    for (const tenant of TENANTS)
      for (let i = 0; i < 4; i++) await uncertain(runtime, fast.scripted, tenant, `fast-${i}`);

    advance(1_000);
    const summary = await createReconcilerHandler(() => runtime)({}, invocation.context());

    expect(summary).toMatchObject({
      complete: true,
      actions: { needs_reconciliation: 3, reconciled_applied: 12 },
    });
    expect(tooSlow.asked).toEqual([]);
    for (const tenant of TENANTS) {
      expect(await runtime.deps.store.get(operationKey(tenant, 'too-slow'))).toMatchObject({
        state: 'needs_reconciliation',
        outcome_code: 'reconcile_too_slow',
      });
    }
  });

  it('an operator pass leaves a check that does not fit for the schedule and settles the others', async () => {
    const invocation = new Invocation();
    const slow = checkedTool('test.slow', 15_000, 15_000, invocation);
    const fast = checkedTool('test.fast', 1_000, 50, invocation);
    const { runtime, advance } = await setup([slow.scripted.tool, fast.scripted.tool]);
    for (let i = 0; i < 3; i++) await uncertain(runtime, slow.scripted, 'acme', `slow-${i}`);
    for (let i = 0; i < 6; i++) await uncertain(runtime, fast.scripted, 'acme', `fast-${i}`);
    advance(1_000);
    const before = await runtime.deps.store.get(operationKey('acme', 'slow-2'));

    // The API's 29 s, as POST /v1/reconciliations gets it: one 15 s check fits, the others do not.
    invocation.remaining = 29_000;
    const summary = await reconcilePass(
      runtime.deps,
      { ...newRequest(runtime.deps), remainingMs: () => invocation.remaining },
      { tenant: 'acme', outOfTime: 'leave', holdBackMs: 29_000 * 0.2, parallelism: 1 },
    );

    expect(summary.complete).toBe(false);
    expect(summary.actions).toMatchObject({ reconciled_applied: 7, left_for_schedule: 2 });
    for (let i = 0; i < 6; i++) expect(await stateOf(runtime, 'acme', `fast-${i}`)).toBe('succeeded');
    // Left as it was: the schedule is not delayed by an operator's pass.
    expect((await runtime.deps.store.get(operationKey('acme', 'slow-2')))?.attention_at).toBe(
      before?.attention_at,
    );
  });
});
