import { Agent, type AgentInputItem, RunState, run, setTracingDisabled, tool } from '@openai/agents';
import { assistantMessage, functionCall, modelError, ScriptedModel } from '@openai/agents/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  AWAITING_APPROVAL_NOTE,
  bearerToken,
  NotAppliedError,
  REPLAY_NOTE,
  type RunContext,
  ToolLedgerClient,
} from '../../client/index';
import { currentRunContext, withLedger } from '../../client/openai-agents-entry';
import { operationKey } from '../../functions/contract/keys';
import { deferred } from '../client/support/manual-clock';
import { useDynalite } from '../support/dynalite';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `@tool-ledger/client/openai-agents` with the OpenAI Agents SDK's own runner (`run`, `RunState`,
 * `state.approve`) and its own scripted model (`@openai/agents/testing`), against the real ledger: the
 * API handler on dynalite over HTTP, its clock and reconciler driven by the test. A re-run of a step gets
 * a response generated again, as a provider sends it: the same calls with new call IDs. Every refund lands
 * in an in-test payments service that counts them, so "one effect" is counted where the effect happens.
 */

// No traces to export from a test.
setTracingDisabled(true);

const db = useDynalite();
let served: ServedLedger;
let faults: FaultyFetch;
let run_ = 0;
let generation = 0;

beforeEach(async () => {
  served = await serveLedger(db);
  faults = new FaultyFetch();
  run_++;
});
afterEach(async () => {
  await served.close();
});

/** A payments service with its own record of refunds, looked up by idempotency key (what `reconcile` asks). */
class Payments {
  readonly refunds: { invoice: string; cents: number; key: string | undefined }[] = [];
  refund(invoice: string, cents: number): { refundId: string } {
    this.refunds.push({ invoice, cents, key: currentRunContext()?.downstreamKey });
    return { refundId: `re-${this.refunds.length}` };
  }
  readonly reconcile = (ctx: RunContext) => {
    const index = this.refunds.findIndex((r) => r.key === ctx.downstreamKey);
    return index >= 0
      ? { status: 'applied' as const, result: { refundId: `re-${index + 1}` } }
      : { status: 'not_applied' as const };
  };
}

function client(token = 'agent-a', fetch: typeof globalThis.fetch = faults.fetch) {
  return new ToolLedgerClient({
    endpoint: served.endpoint,
    signer: bearerToken(token),
    fetch,
    backoff: { baseMs: 5, maxMs: 20 },
    pollBackoff: { baseMs: 5, maxMs: 20 },
    deadlineMs: 30_000,
  });
}

const refundParameters = z.object({ invoice: z.string(), cents: z.number().int() });

/** The tool as an application writes it, with the ledger's options for this test. */
function refundTool(
  payments: Payments,
  options: Parameters<typeof withLedger>[2],
  extra: { needsApproval?: boolean; ledger?: ToolLedgerClient } = {},
) {
  return tool(
    withLedger(
      extra.ledger ?? client(),
      {
        name: 'refund',
        description: 'Refund part of an invoice',
        parameters: refundParameters,
        needsApproval: extra.needsApproval ?? false,
        execute: async ({ invoice, cents }) => payments.refund(invoice, cents),
      },
      options,
    ),
  );
}

/** One model response with these calls, each with a call ID minted for this generation. */
function calls(...list: { name: string; args: Record<string, unknown> }[]) {
  return list.map((c) => functionCall(c.name, c.args, { callId: `call-${++generation}` }));
}

const refundIn123 = { name: 'refund', args: { invoice: 'in_123', cents: 500 } };
const input: AgentInputItem[] = [{ role: 'user', content: 'Refund 5 euros on in_123' }];

/** What the model read as the output of its call `callId`, in the request it got after the tools ran. */
function outputSeen(model: ScriptedModel, request: number): unknown[] {
  const items = model.calls[request]?.request.input;
  if (!Array.isArray(items)) return [];
  return items
    .filter((item) => item.type === 'function_call_result')
    .map((item) => {
      const output = item.output;
      const text =
        typeof output === 'string'
          ? output
          : !Array.isArray(output) && output.type === 'text'
            ? output.text
            : JSON.stringify(output);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    });
}

/** The SDK's call ID of an interrupted call. */
function callIdOf(item: { type: string; callId?: string }): string {
  if (item.type !== 'function_call' || item.callId === undefined) throw new Error('not a function call');
  return item.callId;
}

async function stored(operationId: string) {
  return served.ledger.store.get(operationKey('acme', operationId));
}

describe('withLedger with the Agents SDK runner', () => {
  it('runs the write tool once; the same step re-run as after a crash is a replay the model is told about', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    // The process dies after the refund was recorded, before the run ends (its next model call fails).
    const first = new ScriptedModel([calls(refundIn123), modelError(new Error('the process died'))]);
    const agent = new Agent({ name: 'billing', model: first, tools: [refundTool(payments, { runId })] });
    await expect(run(agent, input)).rejects.toThrow('the process died');
    expect(payments.refunds).toHaveLength(1);
    expect(payments.refunds[0]!.key).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(await stored(`${runId}/1/refund/0`)).toMatchObject({ state: 'succeeded', attempt: 1 });

    // A new process re-runs the same request: a new agent, the response generated again with new call IDs.
    const again = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    const agent2 = new Agent({ name: 'billing', model: again, tools: [refundTool(payments, { runId })] });
    const result = await run(agent2, input);
    expect(result.finalOutput).toBe('done');
    expect(payments.refunds).toHaveLength(1);
    expect(outputSeen(again, 1)).toEqual([
      {
        operation_id: `${runId}/1/refund/0`,
        state: 'succeeded',
        replayed: true,
        note: REPLAY_NOTE,
        result: { refundId: 're-1' },
      },
    ]);
  });

  it("a call that runs the effect gives the model the tool's own result; a read tool passes through", async () => {
    const payments = new Payments();
    const model = new ScriptedModel([
      calls(
        { name: 'lookup', args: { invoice: 'in_9' } },
        { name: 'refund', args: { invoice: 'in_9', cents: 1 } },
      ),
      [assistantMessage('done')],
    ]);
    const lookup = tool(withLedger(client(), lookupOptions(), { read: ['lookup'] }));
    const agent = new Agent({
      name: 'billing',
      model,
      tools: [lookup, refundTool(payments, { runId: `turn-${run_}` })],
    });
    await run(agent, input);
    expect(outputSeen(model, 1)).toEqual([{ invoice: 'in_9', cents: 1200 }, { refundId: 're-1' }]);
    expect(await stored(`turn-${run_}/1/refund/0`)).toMatchObject({ state: 'succeeded' });
    expect(faults.bodies('claim').map((b) => b.tool)).toEqual(['refund']);
  });

  it('two calls to the tool in one response are two operations; regenerated with new call IDs, both replay', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const two = () =>
      calls(
        { name: 'refund', args: { invoice: 'in_1', cents: 100 } },
        { name: 'refund', args: { invoice: 'in_2', cents: 200 } },
      );
    const first = new ScriptedModel([two(), [assistantMessage('done')]]);
    await run(new Agent({ name: 'billing', model: first, tools: [refundTool(payments, { runId })] }), input);
    expect(payments.refunds.map((r) => r.invoice)).toEqual(['in_1', 'in_2']);

    const again = new ScriptedModel([two(), [assistantMessage('done')]]);
    await run(new Agent({ name: 'billing', model: again, tools: [refundTool(payments, { runId })] }), input);
    expect(payments.refunds).toHaveLength(2);
    expect(outputSeen(again, 1)).toMatchObject([
      { operation_id: `${runId}/1/refund/0`, replayed: true, result: { refundId: 're-1' } },
      { operation_id: `${runId}/1/refund/1`, replayed: true, result: { refundId: 're-2' } },
    ]);
  });

  it('the next step of the run is a new operation (the step is the model responses so far)', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const model = new ScriptedModel([
      calls(refundIn123),
      calls({ name: 'refund', args: { invoice: 'in_124', cents: 500 } }),
      [assistantMessage('done')],
    ]);
    await run(new Agent({ name: 'billing', model, tools: [refundTool(payments, { runId })] }), input);
    expect(payments.refunds.map((r) => r.invoice)).toEqual(['in_123', 'in_124']);
    expect(await stored(`${runId}/1/refund/0`)).toMatchObject({ state: 'succeeded' });
    expect(await stored(`${runId}/2/refund/0`)).toMatchObject({ state: 'succeeded' });
  });

  it('changed arguments under the same ID are refused: the model is told of the conflict and nothing runs', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const first = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    await run(new Agent({ name: 'billing', model: first, tools: [refundTool(payments, { runId })] }), input);

    const changed = new ScriptedModel([
      calls({ name: 'refund', args: { invoice: 'in_123', cents: 900 } }),
      [assistantMessage('done')],
    ]);
    await run(
      new Agent({ name: 'billing', model: changed, tools: [refundTool(payments, { runId })] }),
      input,
    );
    expect(payments.refunds).toHaveLength(1);
    expect(outputSeen(changed, 1)).toEqual([
      {
        operation_id: `${runId}/1/refund/0`,
        state: 'conflict',
        replayed: false,
        error: {
          code: 'idempotency_key_reused',
          message: 'this call was already made at this step with different arguments; nothing ran',
        },
      },
    ]);
  });

  it('a crash between the effect and its commit is recovered through reconcile: one refund, a replay', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    // The outcome request never leaves: the process died after the refund, before the ledger heard of it.
    const died = deferred();
    const dying: typeof fetch = (request, init) => {
      if (String(request).endsWith('/outcome')) {
        died.resolve();
        return new Promise<Response>(() => {});
      }
      return faults.fetch(request, init);
    };
    const first = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    const tools = [refundTool(payments, { runId, leaseSeconds: 5 }, { ledger: client('agent-a', dying) })];
    void run(new Agent({ name: 'billing', model: first, tools }), input).catch(() => {});
    await died.promise;
    expect(payments.refunds).toHaveLength(1);
    served.ledger.advance(6_000);
    await served.reconcile();
    expect(await stored(`${runId}/1/refund/0`)).toMatchObject({ state: 'uncertain', attempt: 1 });

    const again = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    const tools2 = [refundTool(payments, { runId, reconcile: payments.reconcile })];
    await run(new Agent({ name: 'billing', model: again, tools: tools2 }), input);
    expect(payments.refunds).toHaveLength(1);
    expect(await stored(`${runId}/1/refund/0`)).toMatchObject({ state: 'succeeded', reconciled: true });
    expect(outputSeen(again, 1)).toMatchObject([{ replayed: true, result: { refundId: 're-1' } }]);
  });

  it('a not-applied throw is retried under the same downstream key; the model reads the result', async () => {
    const payments = new Payments();
    let attempts = 0;
    const flaky = tool(
      withLedger(
        client(),
        {
          name: 'refund',
          description: 'Refund part of an invoice',
          parameters: refundParameters,
          execute: async ({ invoice, cents }) => {
            if (++attempts === 1) throw new NotAppliedError('connect_refused', 'the payments API refused');
            return payments.refund(invoice, cents);
          },
        },
        { runId: `turn-${run_}` },
      ),
    );
    const model = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    await run(new Agent({ name: 'billing', model, tools: [flaky] }), input);
    expect(attempts).toBe(2);
    expect(payments.refunds).toHaveLength(1);
    expect(outputSeen(model, 1)).toEqual([{ refundId: 're-1' }]);
  });
});

describe('withLedger and the SDK approvals', () => {
  it("a person's approval in the SDK is recorded in the ledger, bound to the call's ID and digest; a resumed state replays", async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const approver = client('approver-a');
    const first = new ScriptedModel([calls(refundIn123)]);
    const agent = new Agent({
      name: 'billing',
      model: first,
      tools: [refundTool(payments, { runId, approver }, { needsApproval: true })],
    });
    const interrupted = await run(agent, input);
    expect(interrupted.interruptions).toHaveLength(1);
    expect(payments.refunds).toHaveLength(0);
    const callId = callIdOf(interrupted.interruptions[0]!.rawItem);
    expect(faults.bodies('claim')).toHaveLength(0);
    const saved = interrupted.state.toString();

    // Later, in another process: the application restores the state, a person approves, the run resumes.
    const resumeIn = async (serialized: string) => {
      const model = new ScriptedModel([[assistantMessage('done')]]);
      const restoredAgent = new Agent({
        name: 'billing',
        model,
        tools: [refundTool(payments, { runId, approver }, { needsApproval: true })],
      });
      const state = await RunState.fromString(restoredAgent, serialized);
      return { state, model, agent: restoredAgent };
    };
    const second = await resumeIn(saved);
    for (const item of second.state.getInterruptions()) second.state.approve(item);
    const approved = second.state.toString();
    await run(second.agent, second.state);
    expect(payments.refunds).toHaveLength(1);
    const operationId = `${runId}/1/refund/call-${callId}`;
    const record = await stored(operationId);
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1, policy: { requires_approval: true } });
    expect(record?.approval).toMatchObject({
      decision: 'approve',
      arguments_digest: record?.arguments_digest,
    });
    expect(record?.approval?.by).not.toBe(record?.requested_by);
    expect(outputSeen(second.model, 0)).toEqual([{ refundId: 're-1' }]);

    // The process died before the run's end was saved: the approved state is resumed again.
    const third = await resumeIn(approved);
    await run(third.agent, third.state);
    expect(payments.refunds).toHaveLength(1);
    expect(outputSeen(third.model, 0)).toMatchObject([
      { operation_id: operationId, replayed: true, result: { refundId: 're-1' } },
    ]);
  });

  it('a rejection in the SDK runs nothing and records nothing', async () => {
    const payments = new Payments();
    const approver = client('approver-a');
    const model = new ScriptedModel([calls(refundIn123), [assistantMessage('understood')]]);
    const agent = new Agent({
      name: 'billing',
      model,
      tools: [refundTool(payments, { runId: `turn-${run_}`, approver }, { needsApproval: true })],
    });
    const interrupted = await run(agent, input);
    for (const item of interrupted.interruptions) interrupted.state.reject(item);
    const result = await run(agent, interrupted.state);
    expect(result.finalOutput).toBe('understood');
    expect(payments.refunds).toHaveLength(0);
    expect(faults.delivered).toHaveLength(0);
  });

  it('requiresApproval with an approver asks through the SDK: an interruption first, then the recorded approval', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const agent = new Agent({
      name: 'billing',
      model: new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]),
      tools: [refundTool(payments, { runId, approver: client('approver-a'), requiresApproval: true })],
    });
    const interrupted = await run(agent, input);
    expect(interrupted.interruptions).toHaveLength(1);
    expect(faults.delivered).toHaveLength(0);
    const callId = callIdOf(interrupted.interruptions[0]!.rawItem);
    for (const item of interrupted.interruptions) interrupted.state.approve(item);
    await run(agent, interrupted.state);
    expect(payments.refunds).toHaveLength(1);
    const record = await stored(`${runId}/1/refund/call-${callId}`);
    expect(record).toMatchObject({ state: 'succeeded', policy: { requires_approval: true } });
    expect(record?.approval).toMatchObject({
      decision: 'approve',
      arguments_digest: record?.arguments_digest,
    });
    expect(served.ledger.queue.messages).toHaveLength(0);
  });

  it('requiresApproval without an approver: the ledger holds the call, the model is told it waits, nothing runs', async () => {
    const payments = new Payments();
    const runId = `turn-${run_}`;
    const model = new ScriptedModel([calls(refundIn123), [assistantMessage('waiting')]]);
    const agent = new Agent({
      name: 'billing',
      model,
      tools: [refundTool(payments, { runId, requiresApproval: true })],
    });
    const result = await run(agent, input);
    expect(result.interruptions).toHaveLength(0);
    expect(payments.refunds).toHaveLength(0);
    expect(outputSeen(model, 1)).toEqual([
      {
        operation_id: `${runId}/1/refund/0`,
        state: 'awaiting_approval',
        replayed: false,
        note: AWAITING_APPROVAL_NOTE,
      },
    ]);
    expect(await stored(`${runId}/1/refund/0`)).toMatchObject({ state: 'awaiting_approval' });
  });
});

describe('withLedger refuses what it cannot run safely', () => {
  it('no runId nor operationId, a tool without a name, or an outputSchema: a TypeError at once', () => {
    const base = lookupOptions();
    expect(() => withLedger(client(), base, {})).toThrow(/options\.runId/);
    expect(() => withLedger(client(), { ...base, name: '' }, { runId: 'r' })).toThrow(/name/);
    expect(() =>
      withLedger(client(), { ...base, outputSchema: z.object({ invoice: z.string() }) } as typeof base, {
        runId: 'r',
      }),
    ).toThrow(/outputSchema/);
    expect(() => withLedger(client(), { ...base, name: '9lives' }, { runId: 'r' })).toThrow(/ledger name/);
  });

  it('your own operationId replaces the default; it sees the run, the step and the position', async () => {
    const payments = new Payments();
    const model = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    const refund = refundTool(payments, {
      operationId: (call) => `mine-${run_}/${call.step}/${call.callIndex}/${call.toolName}`,
    });
    await run(new Agent({ name: 'billing', model, tools: [refund] }), input);
    expect(await stored(`mine-${run_}/1/0/refund`)).toMatchObject({ state: 'succeeded' });
  });

  it('a function runId reads the run identity from the context the application passes to run()', async () => {
    const payments = new Payments();
    const model = new ScriptedModel([calls(refundIn123), [assistantMessage('done')]]);
    interface TurnContext {
      turnId: string;
    }
    const refund = tool(
      withLedger<typeof refundParameters, TurnContext>(
        client(),
        {
          name: 'refund',
          description: 'Refund part of an invoice',
          parameters: refundParameters,
          execute: async ({ invoice, cents }) => payments.refund(invoice, cents),
        },
        { runId: (ctx) => ctx.context.turnId },
      ),
    );
    const agent = new Agent<TurnContext>({ name: 'billing', model, tools: [refund] });
    await run(agent, input, { context: { turnId: `ctx-${run_}` } });
    expect(await stored(`ctx-${run_}/1/refund/0`)).toMatchObject({ state: 'succeeded' });
  });
});

function lookupOptions() {
  return {
    name: 'lookup',
    description: 'Look an invoice up',
    parameters: z.object({ invoice: z.string() }),
    execute: async ({ invoice }: { invoice: string }) => ({ invoice, cents: 1200 }),
  };
}
