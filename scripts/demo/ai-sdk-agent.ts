import { generateText, type ModelMessage, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import * as z from 'zod';
import { currentRunContext, withLedger } from '../../client/ai-sdk-entry';
import { bearerToken, ToolLedgerClient } from '../../client/index';

/**
 * The demo's AI SDK agent, one process per run: `generateText` with the SDK's mock model (no network),
 * whose one step asks to email a customer. The tool runs through `@tool-ledger/client/ai-sdk`. With
 * `crash`, the process kills itself (SIGKILL) right after the mail service sent the email and before
 * the ledger heard how the call ended: the worst moment to die. Each run prints one JSON line of what
 * it saw, for the demo to narrate.
 *
 * Usage: `TOOL_LEDGER_TOKEN=<agent token> node --import tsx scripts/demo/ai-sdk-agent.ts <ledger api> <mail
 * service> crash|resume` (the scene passes the agent token local mode made for its data folder).
 */

const [api, mail, mode] = process.argv.slice(2);
if (api === undefined || mail === undefined || (mode !== 'crash' && mode !== 'resume')) {
  process.stderr.write('usage: ai-sdk-agent.ts <ledger api> <mail service> crash|resume\n');
  process.exit(2);
}

/** The conversation so far: what a restarted process reads back from its own store. */
const conversation: ModelMessage[] = [
  { role: 'user', content: 'Tell ana@example.com that her order shipped.' },
];

const usage = {
  inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 8, text: 8, reasoning: undefined },
};

/** A model that asks for the email (with a new call ID each time, as a provider does), then answers. */
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) =>
    prompt.at(-1)?.role === 'tool'
      ? {
          content: [{ type: 'text', text: 'Done: Ana knows her order shipped.' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        }
      : {
          content: [
            {
              type: 'tool-call',
              toolCallId: `call_${process.pid}`,
              toolName: 'notifyCustomer',
              input: JSON.stringify({ to: 'ana@example.com', text: 'Your order shipped.' }),
            },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        },
});

const notifyCustomer = tool({
  description: 'Emails a customer',
  inputSchema: z.object({ to: z.string(), text: z.string() }),
  execute: async ({ to, text }, { abortSignal }) => {
    const response = await fetch(`${mail}/send`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': currentRunContext()?.downstreamKey ?? '',
      },
      body: JSON.stringify({ to, text }),
      signal: abortSignal ?? null,
    });
    const sent = (await response.json()) as { messageId: string };
    if (mode === 'crash') {
      print({ event: 'sent', messageId: sent.messageId });
      process.kill(process.pid, 'SIGKILL'); // the email is out; the ledger never hears how it ended
    }
    return sent;
  },
});

const ledger = new ToolLedgerClient({
  endpoint: api,
  signer: bearerToken(process.env.TOOL_LEDGER_TOKEN ?? ''),
  deadlineMs: 20_000,
});
const tools = withLedger(
  ledger,
  { notifyCustomer },
  {
    runId: 'demo-chat-7',
    tools: {
      notifyCustomer: {
        leaseSeconds: 2,
        // After a crash the ledger only knows the lease ran out: ask the mail service by the call's key.
        reconcile: async (ctx) => {
          const found = await fetch(`${mail}/sent/${encodeURIComponent(ctx.downstreamKey)}`);
          if (found.status === 404) return { status: 'not_applied' };
          return { status: 'applied', result: (await found.json()) as { messageId: string } };
        },
      },
    },
  },
);

const result = await generateText({ model, tools, messages: conversation, stopWhen: stepCountIs(3) });
print({ event: 'done', output: result.steps[0]?.toolResults[0]?.output, text: result.text });

function print(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
