import { afterEach, describe, expect, it, vi } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import type { AnyTool } from '../../functions/domain/tool';
import { newRequest } from '../../functions/engine/ledger-deps';
import { submitOperation } from '../../functions/engine/submit-operation';
import { invocationContext } from '../../functions/local/lambda-context';
import { logger } from '../../functions/observability/logger';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import { createReconcilerHandler } from '../../functions/reconciler/reconciler-handler';
import { buildRuntime, type Runtime } from '../../functions/wiring';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';

/** The reconciler handler (SPEC §7) over real dynalite: one pass per invocation, counts logged. */

const RECONCILER = { name: 'test-reconciler', timeoutMs: 60_000 };
const EVENT = {};

const db = useDynalite();

afterEach(() => {
  vi.restoreAllMocks();
});

async function setup(tools: AnyTool[]): Promise<{ runtime: Runtime; metrics: MemoryLedgerMetrics }> {
  const runtime = buildRuntime(() => tools, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
  });
  const metrics = new MemoryLedgerMetrics();
  runtime.deps.metrics = metrics;
  runtime.deps.log = () => undefined;
  return { runtime, metrics };
}

function submit(runtime: Runtime, tool: string, operationId: string) {
  return submitOperation(runtime.deps, newRequest(runtime.deps), {
    tenant: 'acme',
    principal: 'agent-1',
    operationId,
    tool,
    arguments: { target: 't' },
    mode: 'sync',
  });
}

describe('reconciler handler', () => {
  it('runs one pass: an uncertain effect that happened becomes succeeded, one without reconcile goes to an operator', async () => {
    const checked = new ScriptedTool('test.checked');
    const opaque = new ScriptedTool('test.opaque', { reconcile: undefined });
    const { runtime, metrics } = await setup([checked.tool, opaque.tool]);
    checked.next({ kind: 'uncertain', code: 'http_503' });
    opaque.next({ kind: 'uncertain', code: 'http_503' });
    expect((await submit(runtime, 'test.checked', 'u-1')).record.state).toBe('uncertain');
    expect((await submit(runtime, 'test.opaque', 'u-2')).record.state).toBe('uncertain');

    const info = vi.spyOn(logger, 'info');
    const handler = createReconcilerHandler(() => runtime);
    const summary = await handler(EVENT, invocationContext(RECONCILER));

    expect(summary.actions).toMatchObject({ reconciled_applied: 1, needs_reconciliation: 1 });
    expect(await runtime.deps.store.get(operationKey('acme', 'u-1'))).toMatchObject({
      state: 'succeeded',
      reconciled: true,
    });
    expect(await runtime.deps.store.get(operationKey('acme', 'u-2'))).toMatchObject({
      state: 'needs_reconciliation',
    });
    expect(checked.starts).toHaveLength(1);
    expect(opaque.starts).toHaveLength(1);
    expect(metrics.total('Reconciliations')).toBeGreaterThanOrEqual(2);

    // The summary line carries counts only: no operation IDs, arguments or results.
    const line = info.mock.calls.find(([message]) => message === 'reconcile pass');
    expect(line).toBeDefined();
    expect(Object.keys(line?.[1] as object).sort()).toEqual([
      'actions',
      'complete',
      'deferred',
      'duration_ms',
      'pages',
      'read',
      'skipped',
    ]);
    expect(JSON.stringify(line)).not.toContain('u-1');
  });

  it('a second invocation over settled records does nothing', async () => {
    const checked = new ScriptedTool('test.checked');
    const { runtime } = await setup([checked.tool]);
    checked.next({ kind: 'uncertain', code: 'reset' });
    await submit(runtime, 'test.checked', 'u-3');
    const handler = createReconcilerHandler(() => runtime);
    await handler(EVENT, invocationContext(RECONCILER));
    const second = await handler(EVENT, invocationContext(RECONCILER));
    expect(second.read).toBe(0);
    expect(second.actions).toEqual({});
  });

  it('a pass that fails is logged by class and rethrown, so the invocation is reported failed', async () => {
    const { runtime } = await setup([new ScriptedTool('test.any').tool]);
    vi.spyOn(runtime.deps.store, 'queryAttention').mockRejectedValue(new Error('injected outage'));
    const error = vi.spyOn(logger, 'error');
    const handler = createReconcilerHandler(() => runtime);
    await expect(handler(EVENT, invocationContext(RECONCILER))).rejects.toThrow('injected outage');
    const line = error.mock.calls.find(([message]) => message === 'reconcile pass failed');
    expect(line?.[1]).toMatchObject({ error_class: 'Error' });
    expect(JSON.stringify(line)).not.toContain('injected outage');
  });
});
