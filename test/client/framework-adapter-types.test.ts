import { tool as langchainTool } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { Agent, type FunctionTool, type RunContext, run, tool } from '@openai/agents';
import { assistantMessage, ScriptedModel } from '@openai/agents/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod';
import { bearerToken, ToolLedgerClient } from '../../client/index';
import { withLedger as withLangChainLedger } from '../../client/langchain-entry';
import { withLedger as withAgentsLedger } from '../../client/openai-agents-entry';

/*
 * The OpenAI Agents and LangChain entries take the frameworks' own tool shapes and give back what the
 * frameworks accept, with no cast in the user's code. Type-checking this file (part of `npm test`) is the
 * type-level test; the run-time tests hand the wrapped tools to each framework.
 */

const ledger = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:9', signer: bearerToken('t') });
const parameters = z.object({ invoice: z.string(), cents: z.number().int() });

describe('withLedger types (OpenAI Agents SDK)', () => {
  it("keeps the tool() options' types: the input is the schema's, the tool is the SDK's FunctionTool", async () => {
    const refund = tool(
      withAgentsLedger(
        ledger,
        {
          name: 'refund',
          description: 'Refund part of an invoice',
          parameters,
          execute: async (input) => {
            expectTypeOf(input).toEqualTypeOf<{ invoice: string; cents: number }>();
            return `refunded ${input.cents}`;
          },
        },
        { runId: 'turn-1' },
      ),
    );
    // The same type tool() gives the options unwrapped.
    const plain = tool({ name: 'refund', description: 'd', parameters, execute: async () => 'ok' });
    expectTypeOf(refund).toEqualTypeOf<typeof plain>();
    expectTypeOf(refund).toExtend<FunctionTool<unknown, typeof parameters, string>>();
    // A run identity read from the application's own context type.
    withAgentsLedger<typeof parameters, { turnId: string }>(
      ledger,
      { name: 'refund', description: 'd', parameters, execute: async () => 'ok' },
      {
        runId: (ctx) => {
          expectTypeOf(ctx).toEqualTypeOf<RunContext<{ turnId: string }>>();
          return ctx.context.turnId;
        },
      },
    );
    expect(() =>
      withAgentsLedger(
        ledger,
        // @ts-expect-error a write tool's output must be able to carry the ledger's text
        { name: 'r', description: 'd', parameters, outputSchema: parameters, execute: async (i) => i },
        { runId: 'r' },
      ),
    ).toThrow(/outputSchema/);

    const agent = new Agent({
      name: 'a',
      model: new ScriptedModel([[assistantMessage('hi')]]),
      tools: [refund],
    });
    expect((await run(agent, 'hello')).finalOutput).toBe('hi');
  });
});

describe('withLedger types (LangChain)', () => {
  it('gives back the same tools, which ToolNode and bindTools accept', async () => {
    const refund = langchainTool(async ({ cents }) => `refunded ${cents}`, {
      name: 'refund',
      description: 'Refund part of an invoice',
      schema: parameters,
    });
    const lookup = langchainTool(async ({ invoice }) => invoice, {
      name: 'lookup',
      description: 'Look an invoice up',
      schema: z.object({ invoice: z.string() }),
    });
    const tools = withLangChainLedger(ledger, [refund, lookup], { read: ['lookup'] });
    expectTypeOf(tools).toEqualTypeOf<(typeof refund | typeof lookup)[]>();
    const node = new ToolNode(tools);
    const model = new FakeStreamingChatModel({}).bindTools(tools);
    expect(node.tools.map((t) => t.name)).toEqual(['refund', 'lookup']);
    expect(tools[1]).toBe(lookup);
    expect(tools[0]).not.toBe(refund);
    expect(tools[0]).toBeInstanceOf(Object.getPrototypeOf(refund).constructor);
    expect(model).toBeDefined();
    // @ts-expect-error per-tool options are ledger options
    withLangChainLedger(ledger, [refund], { tools: { refund: { leaseSeconds: '5' } } });
  });
});
