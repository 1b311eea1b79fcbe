import { describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { handleWorkMessage } from '../../functions/queue/handle-work-message';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';

const db = useDynalite();
const message = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    operation_id: 'm-1',
    tenant: 'acme',
    tool: 'test.t',
    arguments: { target: 'a' },
    ...extra,
  });

describe('work messages', () => {
  it.each([
    ['an agent_run_id with a control character', { agent_run_id: 'run\u0001' }],
    ['an empty agent_run_id', { agent_run_id: '' }],
    ['a non-ASCII agent_run_id', { agent_run_id: 'rün' }],
    ['an unknown field', { priority: 1 }],
    ['a tenant the queue does not carry', { tenant: 'other' }],
  ])('%s is refused (reported failed, so the DLQ keeps it) and runs nothing', async (_name, extra) => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const verdict = await handleWorkMessage(ledger.deps, ledger.req(), message(extra), new Set(['acme']));
    expect(verdict.action).toBe('retry');
    expect(await ledger.store.get(operationKey('acme', 'm-1'))).toBeUndefined();
    expect(tool.starts).toHaveLength(0);
  });

  it('a valid message runs once and a duplicate is acknowledged', async () => {
    const tool = new ScriptedTool('test.t');
    const ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
    const body = message({ agent_run_id: 'run-1' });
    expect(await handleWorkMessage(ledger.deps, ledger.req(), body, new Set(['acme']))).toMatchObject({
      action: 'ack',
    });
    expect(await handleWorkMessage(ledger.deps, ledger.req(), body, new Set(['acme']))).toMatchObject({
      action: 'ack',
    });
    expect(tool.effects).toHaveLength(1);
  });
});
