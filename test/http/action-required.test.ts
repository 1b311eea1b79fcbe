import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { toView } from '../../functions/domain/operation';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { testApi } from './support';

const db = useDynalite();
describe('an operation that waits for a person says so', () => {
  it('awaiting_approval carries action_required "approval"; a succeeded one carries nothing', async () => {
    const approved = new ScriptedTool('test.approved', { requiresApproval: true });
    const plain = new ScriptedTool('test.effect');
    const api = await testApi(db.client, [approved.tool, plain.tool]);
    const waiting = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'wait-1',
      body: { tool: 'test.approved', arguments: { target: 'a' } },
    });
    expect(waiting.status).toBe(202);
    expect(waiting.body).toMatchObject({ state: 'awaiting_approval', action_required: 'approval' });
    const done = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'done-1',
      body: { tool: 'test.effect', arguments: { target: 'a' } },
    });
    expect(done.body.state).toBe('succeeded');
    expect(done.body).not.toHaveProperty('action_required');

    // needs_reconciliation: an operator must resolve it; retrying the call cannot move it.
    const record = await api.ledger.store.get(operationKey('acme', 'done-1'));
    const stuck = toView({ ...record!, state: 'needs_reconciliation' });
    expect(stuck.action_required).toBe('operator_resolution');
  });
});
