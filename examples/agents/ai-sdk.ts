import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { currentRunContext, withLedger } from '@tool-ledger/client/ai-sdk';
import { generateText, type LanguageModel, type ModelMessage, stepCountIs, tool } from 'ai';
import * as z from 'zod';

/** Your mail service: it dedupes on the idempotency key it is given, and finds a message by it. */
declare const mail: {
  send(to: string, body: string, options: { idempotencyKey?: string | undefined }): Promise<{ id: string }>;
  find(idempotencyKey: string): Promise<{ id: string } | undefined>;
};
declare const model: LanguageModel;

const ledger = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.TOOL_LEDGER_TOKEN ?? ''),
});

const sendEmail = tool({
  description: 'Sends an email',
  inputSchema: z.object({ to: z.string(), body: z.string() }),
  // Inside a wrapped tool, the claim's downstream key: the same on every attempt of this call.
  execute: ({ to, body }) => mail.send(to, body, { idempotencyKey: currentRunContext()?.downstreamKey }),
});
const searchDocs = tool({
  description: 'Searches the docs',
  inputSchema: z.object({ query: z.string() }),
  execute: async ({ query }) => ({ hits: [query] }),
});

export async function reply(chatId: string, messages: ModelMessage[]) {
  // The same ToolSet, each sendEmail call an operation: a step re-run after a crash replays it.
  const tools = withLedger(
    ledger,
    { sendEmail, searchDocs },
    {
      runId: chatId,
      read: ['searchDocs'],
      tools: {
        sendEmail: {
          reconcile: async (ctx) => {
            const sent = await mail.find(ctx.downstreamKey);
            return sent ? { status: 'applied', result: sent } : { status: 'not_applied' };
          },
        },
      },
    },
  );
  return generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
}
