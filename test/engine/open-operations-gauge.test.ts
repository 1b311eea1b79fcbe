import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { recordOpenOperations } from '../../functions/engine/open-operations-gauge';
import { createReconcilerHandler } from '../../functions/reconciler/reconciler-handler';
import { freshTable, useDynalite } from '../support/dynalite';
import { drive, ScriptedTool, testLedger } from '../support/harness';

const db = useDynalite();
const A = { target: 'a' };
const context = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

describe('open operations gauge', () => {
  it('reports the current stock of needs_reconciliation on every pass until it is resolved, not once per move', async () => {
    const tool = new ScriptedTool('test.t', { reconcile: undefined });
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    tool.next({ kind: 'uncertain', code: 'timeout' });
    await ledger.submit({ operationId: 'stuck-1', arguments: A });
    await drive(ledger);
    expect((await ledger.store.get(operationKey('acme', 'stuck-1')))?.state).toBe('needs_reconciliation');
    tool.next({ kind: 'succeed' });
    await ledger.submit({ operationId: 'done-1', arguments: A });
    await ledger.submit({ operationId: 'later-1', arguments: A, mode: 'async' });

    const handler = createReconcilerHandler(() => ({
      deps: ledger.deps,
      queueTenants: new Set(['acme']),
      queueSenders: undefined,
      refreshTools: async () => {},
      toolEnv: { workspaceRoot: '/tmp/unused', webhookAllow: [], webhookIdempotentOrigins: [], local: true },
    }));
    // Two passes long after the move: a transition count would read 0 here, the gauge still reads 1.
    for (let pass = 0; pass < 2; pass++) {
      ledger.advance(3_600_000);
      await handler({}, context);
      expect(ledger.metrics.total('OpenNeedsReconciliation')).toBe(1);
      expect(ledger.metrics.total('OpenUnresolved')).toBe(2); // stuck-1 and the queued later-1
    }
  });

  it('emits zeros on an empty ledger, so an alarm returns to OK when the last one is resolved', async () => {
    const ledger = testLedger(db.client, await freshTable(db.client), [new ScriptedTool('test.t').tool]);
    ledger.metrics.gauge('OpenNeedsReconciliation', 7);
    expect(await recordOpenOperations(ledger.deps)).toEqual({ unresolved: 0, needsReconciliation: 0 });
    expect(ledger.metrics.total('OpenNeedsReconciliation')).toBe(0);
  });
});
