import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { tool } from '@langchain/core/tools';
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { currentRunContext, withLedger } from '@tool-ledger/client/langchain';
import { z } from 'zod';

/** Your payment service: it dedupes on the idempotency key it is given, and finds a refund by it. */
declare const payments: {
  refund(invoice: string, cents: number, options: { idempotencyKey: string }): Promise<string>;
  find(idempotencyKey: string): Promise<string | undefined>;
};
/** Any chat model that calls tools (ChatOpenAI, ChatAnthropic…). */
declare const chatModel: BaseChatModel & { bindTools: NonNullable<BaseChatModel['bindTools']> };

const ledger = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:3000', signer: bearerToken('dev-token') });
const approver = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.LEDGER_APPROVER_TOKEN ?? ''),
});

const refund = tool(
  async ({ invoice, cents }) =>
    payments.refund(invoice, cents, { idempotencyKey: currentRunContext()!.downstreamKey }),
  {
    name: 'refund',
    description: 'Refund part of an invoice',
    schema: z.object({ invoice: z.string(), cents: z.number().int() }),
  },
);
const lookup = tool(async ({ invoice }) => `${invoice}: 12 euros`, {
  name: 'lookup',
  description: 'Look an invoice up',
  schema: z.object({ invoice: z.string() }),
});

// The same tools back: the operation ID is the thread, the AI messages before the call and its position.
const tools = withLedger(ledger, [refund, lookup], {
  read: ['lookup'],
  approver,
  tools: {
    refund: {
      requiresApproval: true, // asked through LangGraph's interrupt, the answer recorded in the ledger
      reconcile: async (ctx) => {
        const found = await payments.find(ctx.downstreamKey);
        return found ? { status: 'applied', result: found } : { status: 'not_applied' };
      },
    },
  },
});

const model = chatModel.bindTools(tools);
const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
  .addNode('tools', new ToolNode(tools))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile({ checkpointer: new MemorySaver() }); // a step re-run from its checkpoint replays its tool calls

const config = { configurable: { thread_id: 'chat-42' } };
await graph.invoke({ messages: [{ role: 'user', content: 'Refund 5 euros on in_123' }] }, config);
// Interrupted with { type: 'tool-ledger/approval', operation_id, arguments, arguments_digest }; a person says yes:
await graph.invoke(new Command({ resume: { approved: true } }), config);
