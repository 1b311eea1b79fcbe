import { Agent, type ToolsInput } from '@mastra/core/agent';
import { MastraLanguageModelV2Mock } from '@mastra/core/test-utils/llm-mock';
import { createTool } from '@mastra/core/tools';
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod';
import { bearerToken, ToolLedgerClient } from '../../client/index';
import { type LedgerMastraTool, type ToolResultEnvelope, withLedger } from '../../client/mastra-entry';

/*
 * `withLedger` takes Mastra's own tools and gives back tools a Mastra agent accepts, with no cast in the
 * user's code. Type-checking this file (part of `npm test`) is the type-level test; the run-time test
 * hands the wrapped tools to an agent with Mastra's mock model.
 */

const sendEmail = createTool({
  id: 'send-email',
  description: 'Sends an email',
  inputSchema: z.object({ to: z.string() }),
  outputSchema: z.object({ messageId: z.string() }),
  execute: async ({ to }) => ({ messageId: `m-${to}` }),
});
const searchDocs = createTool({
  id: 'search-docs',
  description: 'Searches the docs',
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => ({ hits: [query] }),
});
const ledger = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:9', signer: bearerToken('t') });

describe('withLedger types (Mastra)', () => {
  it('keeps read tools as they are, widens write tool outputs by the envelope, and checks option keys', async () => {
    const tools = withLedger(
      ledger,
      { sendEmail, searchDocs },
      {
        read: ['searchDocs'],
        // The tool's own output type reaches its options.
        tools: { sendEmail: { sanitizeResult: (result) => ({ id: result.messageId }) } },
      },
    );
    expectTypeOf(tools.searchDocs).toEqualTypeOf<typeof searchDocs>();
    expectTypeOf(tools.sendEmail).toEqualTypeOf<LedgerMastraTool<typeof sendEmail>>();
    const one = withLedger(ledger, sendEmail, {
      runId: 'job-1',
      tools: { 'send-email': { leaseSeconds: 30 } },
    });
    expectTypeOf(one).toEqualTypeOf<LedgerMastraTool<typeof sendEmail>>();
    type Output = Awaited<ReturnType<NonNullable<typeof one.execute>>>;
    expectTypeOf<Extract<Output, ToolResultEnvelope>>().toEqualTypeOf<ToolResultEnvelope>();
    expectTypeOf<Extract<Output, { messageId: string }>>().toEqualTypeOf<{ messageId: string }>();
    // @ts-expect-error options name only tools of the set
    expect(() => withLedger(ledger, { sendEmail }, { tools: { sendMail: {} } })).toThrow(TypeError);
    // @ts-expect-error the read tools too
    expect(() => withLedger(ledger, { sendEmail }, { read: ['search'] })).toThrow(TypeError);

    const agentTools: ToolsInput = tools;
    const agent = new Agent({
      id: 'typed',
      name: 'Typed',
      instructions: 'Answer.',
      model: new MastraLanguageModelV2Mock({
        doGenerate: {
          content: [{ type: 'text', text: 'nothing to do' }],
          finishReason: 'stop',
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
          warnings: [],
        },
      }),
      tools: agentTools,
    });
    expect((await agent.generate('hello')).text).toBe('nothing to do');
  });
});
