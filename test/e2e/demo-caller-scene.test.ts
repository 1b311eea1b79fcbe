import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CallerLedgerSide,
  callerProblems,
  callerWithLedger,
  callerWithoutLedger,
} from '../../scripts/demo/caller-scene';

/**
 * The demo's caller-executed scene (`npm run demo`), played as the demo plays it: local mode as a child
 * process, the agent as real processes (the first one `kill -9`ed after its charge was applied and
 * before it heard back, the second started on the same run), a payments target with no idempotency
 * keys that counts the charges it applied. The scene's own checks are the ones that fail the demo.
 */

let root: string;
const lines: string[] = [];
const context = () => ({ root, say: (run: string, line: string) => lines.push(`[${run}] ${line}`) });

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tool-ledger-demo-caller-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the demo scene: a tool in the agent’s own process, the agent killed between effect and record', () => {
  it('through ledger.run: one charge, recovered by the restarted agent’s reconcile after the reconciler marked it uncertain', async () => {
    const side = await callerWithLedger(context());
    expect(side.crashed.signal, lines.join('\n')).toBe('SIGKILL');
    expect(side.charges).toBe(1);
    expect(side.executions).toBe(1);
    expect(side.finished).toMatchObject({ outcome: 'succeeded', executions: 0, reconciled: true });
    expect(side.reconciles).toEqual([{ event: 'reconcile', attempt: 1, found: true }]);
    expect(side.operation).toMatchObject({ state: 'succeeded', attempt: 1, reconciled: true });
    expect(side.states).toContain('uncertain');
    expect(side.states.at(0)).toBe('pending');
    expect(side.states.at(-1)).toBe('succeeded');
    expect(callerProblems(side)).toEqual([]);
  });

  it('without the ledger the same crash and restart charge twice', async () => {
    const side = await callerWithoutLedger(context());
    expect(side.crashed.signal, lines.join('\n')).toBe('SIGKILL');
    expect(side.executions).toBe(2);
    expect(side.charges).toBe(2);
  });

  it('fails the demo when the ledger side shows a second charge or an outcome not recovered', () => {
    const held: CallerLedgerSide = {
      processes: 2,
      crashed: { code: null, signal: 'SIGKILL' },
      executions: 1,
      charges: 1,
      finished: {
        event: 'finished',
        outcome: 'succeeded',
        state: 'succeeded',
        replayed: false,
        executions: 0,
        reconciled: true,
        result: { charge_id: 'ch_1' },
      },
      reconciles: [{ event: 'reconcile', attempt: 1, found: true }],
      operation: {
        operation_id: 'demo-caller-run:s1:c0',
        tool: 'payments.charge',
        state: 'succeeded',
        arguments_digest: 'v1:x',
        attempt: 1,
        replayed: false,
        result: { charge_id: 'ch_1' },
        error: null,
        created_at: '2026-01-01T00:00:00.000Z',
        completed_at: '2026-01-01T00:00:03.000Z',
        reconciled: true,
      },
      states: ['pending', 'uncertain', 'succeeded'],
    };
    expect(callerProblems(held)).toEqual([]);
    expect(callerProblems({ ...held, charges: 2, executions: 2 })).toEqual([
      '2 charges for one intended charge',
      "the tool's code ran 2 times",
    ]);
    expect(
      callerProblems({
        ...held,
        operation: { ...held.operation, state: 'needs_reconciliation', reconciled: false },
        states: ['pending', 'succeeded'],
      }),
    ).toEqual([
      'the operation ended needs_reconciliation',
      'the outcome was not recovered by reconcile',
      'the reconciler never marked the operation uncertain',
    ]);
  });
});
