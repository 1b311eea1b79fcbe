import { describe, expect, it } from 'vitest';
import {
  type FrameworkToolCall,
  frameworkOperationId,
  isLedgerEnvelope,
  ledgerToolName,
  planTools,
} from '../../client/adapters/framework-common';

/**
 * What the framework adapters share, on its own: the ledger name a framework tool gets, the options
 * checked before any call, and the default operation ID. The adapters' end-to-end tests show the same
 * rules through each framework.
 */

function call(extra: Partial<FrameworkToolCall> = {}): FrameworkToolCall {
  return {
    toolName: 'sendEmail',
    ledgerTool: 'send_email',
    input: { to: 'a' },
    runId: 'chat-42',
    step: 3,
    callIndex: 0,
    frameworkCallId: 'call_abc',
    ...extra,
  };
}

describe('ledgerToolName', () => {
  it('turns framework names into ledger names, and refuses what cannot become one', () => {
    expect(ledgerToolName('sendEmail')).toBe('send_email');
    expect(ledgerToolName('delete-file')).toBe('delete-file');
    expect(ledgerToolName('billing.refund')).toBe('billing.refund');
    expect(ledgerToolName('HTTPGet')).toBe('httpget');
    expect(ledgerToolName('send email')).toBe('send_email');
    expect(() => ledgerToolName('2fa')).toThrow(/"name" option/);
    expect(() => ledgerToolName('x'.repeat(65))).toThrow(TypeError);
  });
});

describe('planTools', () => {
  const known = ['sendEmail', 'searchDocs', 'clientSide'];
  const executable = ['sendEmail', 'searchDocs'];

  it('wraps write tools under their ledger names and passes read tools through', () => {
    const plans = planTools(executable, known, {
      runId: 'r',
      read: ['searchDocs'],
      tools: { sendEmail: { name: 'mail.send', leaseSeconds: 30 } },
    });
    expect(plans.get('sendEmail')).toEqual({
      effect: 'write',
      ledgerTool: 'mail.send',
      options: { name: 'mail.send', leaseSeconds: 30 },
    });
    expect(plans.get('searchDocs')).toEqual({ effect: 'read' });
    expect(plans.has('clientSide')).toBe(false);
  });

  it('refuses options that cannot be right, naming the option', () => {
    expect(() => planTools(executable, known, { runId: 'r', tools: { sendMail: {} } })).toThrow(
      'options.tools.sendMail names no tool in the set',
    );
    expect(() => planTools(executable, known, { runId: 'r', read: ['search'] })).toThrow(/options\.read/);
    expect(() =>
      planTools(executable, known, { runId: 'r', read: ['searchDocs'], tools: { searchDocs: {} } }),
    ).toThrow(/searchDocs is a read tool/);
    expect(() =>
      planTools(executable, known, { runId: 'r', tools: { sendEmail: { name: 'Mail' } } }),
    ).toThrow(/options\.tools\.sendEmail\.name/);
    expect(() =>
      planTools(executable, known, { runId: 'r', tools: { searchDocs: { name: 'send_email' } } }),
    ).toThrow(/both be recorded as send_email/);
    expect(() => planTools(executable, known, {})).toThrow(/needs options\.runId/);
    expect(() => planTools(executable, known, { runId: '' })).toThrow(/needs options\.runId/);
    expect(() => planTools(executable, known, { runId: 'r', scope: '' })).toThrow(/options\.scope/);
  });

  it('needs no run identity when every tool only reads, or when the caller makes the IDs', () => {
    expect(() => planTools(executable, known, { read: ['sendEmail', 'searchDocs'] })).not.toThrow();
    expect(() => planTools(executable, known, { operationId: () => 'x/1' })).not.toThrow();
  });
});

describe('frameworkOperationId', () => {
  it('is run, step, ledger tool and position: the same for a regenerated call with a new provider ID', () => {
    expect(frameworkOperationId(call(), {})).toBe('chat-42/3/send_email/0');
    expect(frameworkOperationId(call({ frameworkCallId: 'call_xyz' }), {})).toBe('chat-42/3/send_email/0');
  });

  it('tells apart steps, positions, tools, runs and scopes', () => {
    const ids = [
      call(),
      call({ step: 4 }),
      call({ callIndex: 1 }),
      call({ ledgerTool: 'refund' }),
      call({ runId: 'chat-43' }),
    ].map((c) => frameworkOperationId(c, {}));
    ids.push(frameworkOperationId(call(), { scope: 'sub-agent' }));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.at(-1)).toBe('sub-agent/chat-42/3/send_email/0');
  });

  it("uses the caller's own function when given, and refuses a call with no run identity", () => {
    expect(frameworkOperationId(call(), { operationId: (c) => `mine/${c.callIndex}` })).toBe('mine/0');
    expect(() => frameworkOperationId(call({ runId: undefined }), {})).toThrow(/no run identity/);
  });
});

describe('isLedgerEnvelope', () => {
  it("tells the model's envelope from a tool's own output", () => {
    expect(isLedgerEnvelope({ operation_id: 'x', state: 'succeeded', replayed: true })).toBe(true);
    expect(isLedgerEnvelope({ messageId: 'm-1' })).toBe(false);
    expect(isLedgerEnvelope([{ operation_id: 'x', state: 's', replayed: true }])).toBe(false);
    expect(isLedgerEnvelope('text')).toBe(false);
    expect(isLedgerEnvelope(null)).toBe(false);
  });
});
