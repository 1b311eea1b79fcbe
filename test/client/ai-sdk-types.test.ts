import { generateText, type InferToolOutput, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, expectTypeOf, it } from 'vitest';
import * as z from 'zod';
import { isLedgerEnvelope, type ToolResultEnvelope, withLedger } from '../../client/ai-sdk-entry';
import { bearerToken, ToolLedgerClient } from '../../client/index';

/*
 * `withLedger` takes the AI SDK's own tools and gives back a ToolSet the SDK accepts, with no cast in
 * the user's code. Type-checking this file (part of `npm test`) is the type-level test; the one run-time
 * test hands the wrapped set to `generateText` with the SDK's mock model.
 */

const sendEmail = tool({
  description: 'Sends an email',
  inputSchema: z.object({ to: z.string() }),
  execute: async ({ to }) => ({ messageId: `m-${to}` }),
});
const searchDocs = tool({
  description: 'Searches the docs',
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => ({ hits: [query] }),
});
const ledger = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:9', signer: bearerToken('t') });

describe('withLedger types (AI SDK)', () => {
  it('keeps read tools as they are, widens write tool outputs by the envelope, and checks option keys', async () => {
    const tools = withLedger(
      ledger,
      { sendEmail, searchDocs },
      {
        runId: 'chat-1',
        read: ['searchDocs'],
        // The tool's own output type reaches its options.
        tools: { sendEmail: { sanitizeResult: (result) => ({ id: result.messageId }) } },
      },
    );
    expectTypeOf(tools.searchDocs).toEqualTypeOf<typeof searchDocs>();
    expectTypeOf<InferToolOutput<typeof tools.sendEmail>>().toEqualTypeOf<
      { messageId: string } | ToolResultEnvelope
    >();
    const one = withLedger(ledger, sendEmail, { toolName: 'sendEmail', runId: 'chat-1', leaseSeconds: 30 });
    expectTypeOf<InferToolOutput<typeof one>>().toEqualTypeOf<{ messageId: string } | ToolResultEnvelope>();
    // @ts-expect-error options name only tools of the set
    expect(() => withLedger(ledger, { sendEmail }, { runId: 'r', tools: { sendMail: {} } })).toThrow(
      TypeError,
    );
    // @ts-expect-error the read tools too
    expect(() => withLedger(ledger, { sendEmail }, { runId: 'r', read: ['search'] })).toThrow(TypeError);

    const result = await generateText({
      model: new MockLanguageModelV4({
        doGenerate: {
          content: [{ type: 'text', text: 'nothing to do' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: {
            inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 1, text: 1, reasoning: undefined },
          },
          warnings: [],
        },
      }),
      tools,
      prompt: 'hello',
    });
    expect(result.text).toBe('nothing to do');
    for (const part of result.toolResults) {
      if (!part.dynamic && part.toolName === 'sendEmail' && !isLedgerEnvelope(part.output)) {
        expectTypeOf(part.output).toEqualTypeOf<{ messageId: string }>();
      }
    }
  });
});
