import { AIMessage, AIMessageChunk, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import {
  type BaseCheckpointSaver,
  Command,
  END,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { bearerToken, REPLAY_NOTE, type RunContext, ToolLedgerClient } from '../../client/index';
import { currentRunContext, type LangChainLedgerOptions, withLedger } from '../../client/langchain-entry';
import { operationKey } from '../../functions/contract/keys';
import { deferred } from '../client/support/manual-clock';
import { useDynalite } from '../support/dynalite';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `@tool-ledger/client/langchain` with LangChain's own tools and fake chat model (`@langchain/core`) in a
 * LangGraph graph (a model node, a `ToolNode`, a checkpointer), against the real ledger: the API handler
 * on dynalite over HTTP, its clock and reconciler driven by the test. A step is re-run the ways LangGraph
 * re-runs one: the graph resumed on its thread after a node failed or the process died (the checkpoint
 * before the tools node), and a fork from the checkpoint before the model's turn, whose response is
 * generated again with new tool-call IDs. Every refund lands in an in-test payments service.
 */

const db = useDynalite();
let served: ServedLedger;
let faults: FaultyFetch;
let run = 0;
let generation = 0;

beforeEach(async () => {
  served = await serveLedger(db);
  faults = new FaultyFetch();
  run++;
});
afterEach(async () => {
  await served.close();
});

/** A payments service with its own record of refunds, looked up by idempotency key (what `reconcile` asks). */
class Payments {
  readonly refunds: { invoice: string; cents: number; key: string | undefined }[] = [];
  refund(invoice: string, cents: number): string {
    this.refunds.push({ invoice, cents, key: currentRunContext()?.downstreamKey });
    return `refunded re-${this.refunds.length}`;
  }
  readonly reconcile = (ctx: RunContext) => {
    const index = this.refunds.findIndex((r) => r.key === ctx.downstreamKey);
    return index >= 0
      ? { status: 'applied' as const, result: `refunded re-${index + 1}` }
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

function tools(payments: Payments, lookup: () => string | Promise<string> = () => 'in_123: 12 euros') {
  const refund = tool(async ({ invoice, cents }) => payments.refund(invoice, cents), {
    name: 'refund',
    description: 'Refund part of an invoice',
    schema: z.object({ invoice: z.string(), cents: z.number().int() }),
  });
  const lookupTool = tool(async () => lookup(), {
    name: 'lookup',
    description: 'Look an invoice up',
    schema: z.object({ invoice: z.string() }),
  });
  const list: [typeof refund, typeof lookupTool] = [refund, lookupTool];
  return list;
}

type Call = { name: string; args: Record<string, unknown> };

/**
 * The model, turn by turn: LangChain's fake chat model answers turn n (the AI messages so far) with
 * `turns[n]`, tool calls with IDs minted per generation, as a provider does; past the script, "done".
 */
function scripted(turns: Call[][]) {
  const seen: BaseMessage[][] = [];
  return {
    seen,
    node: async (state: typeof MessagesAnnotation.State) => {
      seen.push(state.messages);
      const turn = state.messages.filter((m) => m.getType() === 'ai').length;
      const calls = turns[turn];
      const model =
        calls === undefined
          ? new FakeStreamingChatModel({ responses: [new AIMessage('done')] })
          : new FakeStreamingChatModel({
              responses: [new AIMessage('')],
              chunks: [
                new AIMessageChunk({
                  content: '',
                  tool_calls: calls.map((c) => ({
                    ...c,
                    id: `call-${++generation}`,
                    type: 'tool_call' as const,
                  })),
                }),
              ],
            });
      return { messages: [await model.invoke(state.messages)] };
    },
  };
}

function graph(
  model: ReturnType<typeof scripted>,
  wrapped: ReturnType<typeof tools>,
  checkpointer: BaseCheckpointSaver,
  toolNode: { handleToolErrors?: boolean } = {},
) {
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', model.node)
    .addNode('tools', new ToolNode(wrapped, toolNode))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

const readLookup: LangChainLedgerOptions = { read: ['lookup'] };
const refundIn123: Call = { name: 'refund', args: { invoice: 'in_123', cents: 500 } };
const ask = { messages: [new HumanMessage('Refund 5 euros on in_123')] };

/** The content of the tool messages the model read on its last turn, parsed when it is JSON. */
function toolOutputs(model: ReturnType<typeof scripted>): unknown[] {
  const last = model.seen.at(-1) ?? [];
  const tail = last.slice(last.findLastIndex((m) => m.getType() === 'ai') + 1);
  return tail
    .filter((m) => m.getType() === 'tool')
    .map((m) => {
      const text = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    });
}

async function stored(operationId: string) {
  return served.ledger.store.get(operationKey('acme', operationId));
}

describe('withLedger in a LangGraph graph', () => {
  it("runs the write tool once and the model reads the tool's own result; a read tool passes through", async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const model = scripted([[refundIn123, { name: 'lookup', args: { invoice: 'in_123' } }]]);
    const app = graph(model, withLedger(client(), tools(payments), readLookup), new MemorySaver());
    const result = await app.invoke(ask, { configurable: { thread_id: thread } });
    expect(result.messages.at(-1)?.content).toBe('done');
    expect(payments.refunds).toHaveLength(1);
    expect(payments.refunds[0]!.key).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(toolOutputs(model)).toEqual(['refunded re-1', 'in_123: 12 euros']);
    expect(await stored(`${thread}/0/refund/0`)).toMatchObject({ state: 'succeeded', agent_run_id: thread });
    expect(faults.bodies('claim').map((b) => b.tool)).toEqual(['refund']);
  });

  it('the tools node re-run from its checkpoint after it failed replays the refund: one effect, the model told', async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    let lookupFails = true;
    // The other call of the step fails once the refund is recorded, and takes the tools node down with it.
    const lookup = async () => {
      if (lookupFails) {
        await faults.answered('outcome');
        throw new Error('the invoice service is down');
      }
      return 'in_123: 12 euros';
    };
    const checkpointer = new MemorySaver();
    const model = scripted([[refundIn123, { name: 'lookup', args: { invoice: 'in_123' } }]]);
    const config = { configurable: { thread_id: thread } };
    const wrapped = withLedger(client(), tools(payments, lookup), readLookup);
    await expect(
      graph(model, wrapped, checkpointer, { handleToolErrors: false }).invoke(ask, config),
    ).rejects.toThrow('the invoice service is down');
    expect(payments.refunds).toHaveLength(1);

    lookupFails = false;
    // A new process on the same checkpointer resumes the thread: the tools node runs again.
    const rerun = graph(model, withLedger(client(), tools(payments, lookup), readLookup), checkpointer);
    await rerun.invoke(null, config);
    expect(payments.refunds).toHaveLength(1);
    expect(toolOutputs(model)).toEqual([
      {
        operation_id: `${thread}/0/refund/0`,
        state: 'succeeded',
        replayed: true,
        note: REPLAY_NOTE,
        result: 'refunded re-1',
      },
      'in_123: 12 euros',
    ]);
  });

  it("a fork from before the model's turn regenerates the calls with new IDs: the same operations, replayed", async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const checkpointer = new MemorySaver();
    const two: Call[] = [refundIn123, { name: 'refund', args: { invoice: 'in_124', cents: 700 } }];
    const model = scripted([two]);
    const app = graph(model, withLedger(client(), tools(payments), readLookup), checkpointer);
    const config = { configurable: { thread_id: thread } };
    await app.invoke(ask, config);
    expect(payments.refunds.map((r) => r.invoice)).toEqual(['in_123', 'in_124']);

    const beforeModel = await checkpointBeforeTurn(app, config, 0);
    await app.invoke(null, beforeModel);
    expect(payments.refunds).toHaveLength(2);
    expect(toolOutputs(model)).toMatchObject([
      { operation_id: `${thread}/0/refund/0`, replayed: true, result: 'refunded re-1' },
      { operation_id: `${thread}/0/refund/1`, replayed: true, result: 'refunded re-2' },
    ]);
  });

  it('changed arguments at the same step are refused: the model is told of the conflict and nothing runs', async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const checkpointer = new MemorySaver();
    const turns: Call[][] = [[refundIn123]];
    const model = scripted(turns);
    const app = graph(model, withLedger(client(), tools(payments), readLookup), checkpointer);
    const config = { configurable: { thread_id: thread } };
    await app.invoke(ask, config);
    turns[0] = [{ name: 'refund', args: { invoice: 'in_123', cents: 900 } }];
    await app.invoke(null, await checkpointBeforeTurn(app, config, 0));
    expect(payments.refunds).toHaveLength(1);
    expect(toolOutputs(model)).toEqual([
      {
        operation_id: `${thread}/0/refund/0`,
        state: 'conflict',
        replayed: false,
        error: {
          code: 'idempotency_key_reused',
          message: 'this call was already made at this step with different arguments; nothing ran',
        },
      },
    ]);
  });

  it('the next turn of the thread is a new step: a new operation', async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const model = scripted([[refundIn123], [{ name: 'refund', args: { invoice: 'in_124', cents: 700 } }]]);
    const app = graph(model, withLedger(client(), tools(payments), readLookup), new MemorySaver());
    await app.invoke(ask, { configurable: { thread_id: thread } });
    expect(payments.refunds.map((r) => r.invoice)).toEqual(['in_123', 'in_124']);
    expect(await stored(`${thread}/0/refund/0`)).toMatchObject({ state: 'succeeded' });
    expect(await stored(`${thread}/1/refund/0`)).toMatchObject({ state: 'succeeded' });
  });

  it("a ToolNode in a subgraph names its operations under the subgraph's node: apart from its parent's", async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const model = scripted([[refundIn123]]);
    const inner = graph(model, withLedger(client(), tools(payments), readLookup), new MemorySaver());
    const outer = new StateGraph(MessagesAnnotation)
      .addNode('billing', inner)
      .addEdge(START, 'billing')
      .addEdge('billing', END)
      .compile({ checkpointer: new MemorySaver() });
    await outer.invoke(ask, { configurable: { thread_id: thread } });
    expect(payments.refunds).toHaveLength(1);
    expect(await stored(`billing/${thread}/0/refund/0`)).toMatchObject({ state: 'succeeded' });
  });

  it('a crash between the effect and its commit is recovered through reconcile: one refund, a replay', async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    // The outcome request never leaves: the process died after the refund, before the ledger heard of it.
    const died = deferred();
    const dying: typeof fetch = (request, init) => {
      if (String(request).endsWith('/outcome')) {
        died.resolve();
        return new Promise<Response>(() => {});
      }
      return faults.fetch(request, init);
    };
    const checkpointer = new MemorySaver();
    const model = scripted([[refundIn123]]);
    const config = { configurable: { thread_id: thread } };
    const first = withLedger(client('agent-a', dying), tools(payments), {
      read: ['lookup'],
      tools: { refund: { leaseSeconds: 5 } },
    });
    void graph(model, first, checkpointer)
      .invoke(ask, config)
      .catch(() => {});
    await died.promise;
    expect(payments.refunds).toHaveLength(1);
    served.ledger.advance(6_000);
    await served.reconcile();
    expect(await stored(`${thread}/0/refund/0`)).toMatchObject({ state: 'uncertain', attempt: 1 });

    const again = withLedger(client(), tools(payments), {
      read: ['lookup'],
      tools: { refund: { reconcile: payments.reconcile } },
    });
    await graph(model, again, checkpointer).invoke(null, config);
    expect(payments.refunds).toHaveLength(1);
    expect(await stored(`${thread}/0/refund/0`)).toMatchObject({ state: 'succeeded', reconciled: true });
    expect(toolOutputs(model)).toMatchObject([{ replayed: true, result: 'refunded re-1' }]);
  });
});

describe('withLedger and LangGraph interrupts', () => {
  const approvalOptions = (): LangChainLedgerOptions => ({
    approver: client('approver-a'),
    read: ['lookup'],
    tools: { refund: { requiresApproval: true } },
  });

  it("interrupts for a person's approval, records it bound to the call's ID and digest, then runs once", async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const checkpointer = new MemorySaver();
    const model = scripted([[refundIn123]]);
    const config = { configurable: { thread_id: thread } };
    const app = graph(model, withLedger(client(), tools(payments), approvalOptions()), checkpointer);
    await app.invoke(ask, config);
    const paused = await app.getState(config);
    expect(paused.tasks.flatMap((task) => task.interrupts.map((i) => i.value))).toEqual([
      {
        type: 'tool-ledger/approval',
        operation_id: `${thread}/0/refund/0`,
        tool: 'refund',
        arguments: { invoice: 'in_123', cents: 500 },
        arguments_digest: expect.stringMatching(/^v1:[0-9a-f]{64}$/),
      },
    ]);
    expect(payments.refunds).toHaveLength(0);
    // Held in the ledger meanwhile, where its approvers see it too.
    expect(await stored(`${thread}/0/refund/0`)).toMatchObject({ state: 'awaiting_approval' });

    await app.invoke(new Command({ resume: { approved: true } }), config);
    expect(payments.refunds).toHaveLength(1);
    const record = await stored(`${thread}/0/refund/0`);
    expect(record).toMatchObject({ state: 'succeeded', policy: { requires_approval: true } });
    expect(record?.approval).toMatchObject({
      decision: 'approve',
      arguments_digest: record?.arguments_digest,
    });
    expect(record?.approval?.by).not.toBe(record?.requested_by);
    expect(toolOutputs(model)).toEqual(['refunded re-1']);
  });

  it('a rejection is recorded in the ledger and the model is told; nothing runs, and a re-run stays rejected', async () => {
    const payments = new Payments();
    const thread = `thread-${run}`;
    const checkpointer = new MemorySaver();
    const model = scripted([[refundIn123]]);
    const config = { configurable: { thread_id: thread } };
    const app = graph(model, withLedger(client(), tools(payments), approvalOptions()), checkpointer);
    await app.invoke(ask, config);
    await app.invoke(new Command({ resume: { approved: false } }), config);
    expect(payments.refunds).toHaveLength(0);
    const record = await stored(`${thread}/0/refund/0`);
    expect(record).toMatchObject({ state: 'rejected', approval: { decision: 'reject' } });
    expect(toolOutputs(model)).toEqual([
      { operation_id: `${thread}/0/refund/0`, state: 'rejected', replayed: false },
    ]);

    // The step re-run (a fork before the model's turn, the call generated again): no new question, still rejected.
    await app.invoke(null, await checkpointBeforeTurn(app, config, 0));
    expect((await app.getState(config)).tasks).toHaveLength(0);
    expect(payments.refunds).toHaveLength(0);
    expect(toolOutputs(model)).toMatchObject([{ state: 'rejected', replayed: true }]);
  });
});

describe('withLedger refuses what it cannot run safely', () => {
  it('options naming no tool, or a tool called outside a graph without operationId: a TypeError', async () => {
    const payments = new Payments();
    expect(() => withLedger(client(), tools(payments), { tools: { refnud: {} } })).toThrow(/refnud/);
    const [refund] = withLedger(client(), tools(payments), readLookup);
    await expect(
      refund.invoke(
        { id: 'c1', name: 'refund', args: { invoice: 'in_1', cents: 1 }, type: 'tool_call' },
        { configurable: { thread_id: 't' } },
      ),
    ).rejects.toThrow(/no stable place/);
    expect(payments.refunds).toHaveLength(0);
    expect(faults.delivered).toHaveLength(0);
  });

  it('invoked with its own operationId outside a graph, the tool runs through the ledger once', async () => {
    const payments = new Payments();
    const [refund] = withLedger(client(), tools(payments), {
      ...readLookup,
      operationId: (call) => `manual-${run}/${call.toolCall.id}`,
    });
    const toolCall = {
      id: 'c1',
      name: 'refund',
      args: { invoice: 'in_1', cents: 1 },
      type: 'tool_call' as const,
    };
    const first = await refund.invoke(toolCall);
    const again = await refund.invoke(toolCall);
    expect(first.content).toBe('refunded re-1');
    expect(JSON.parse(String(again.content))).toMatchObject({ replayed: true, result: 'refunded re-1' });
    expect(payments.refunds).toHaveLength(1);
  });
});

/** The config of the checkpoint before the model's turn `turn` (from 0): re-invoking it forks the thread there. */
async function checkpointBeforeTurn(
  app: ReturnType<typeof graph>,
  config: { configurable: { thread_id: string } },
  turn: number,
) {
  for await (const snapshot of app.getStateHistory(config)) {
    const messages: BaseMessage[] = snapshot.values.messages ?? [];
    const turns = messages.filter((m) => m.getType() === 'ai').length;
    if (snapshot.next.includes('agent') && turns === turn) return snapshot.config;
  }
  throw new Error(`no checkpoint before turn ${turn}`);
}
