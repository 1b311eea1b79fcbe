import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { withLedger } from '@tool-ledger/client/mastra';
import * as z from 'zod';

/** Your mail service. */
declare const mail: { send(to: string, body: string): Promise<{ id: string }> };

const endpoint = 'http://127.0.0.1:3000';
const ledger = new ToolLedgerClient({ endpoint, signer: bearerToken(process.env.TOOL_LEDGER_TOKEN ?? '') });
// Records the approvals people give through Mastra (approveToolCall) in the ledger: another principal.
const approver = new ToolLedgerClient({
  endpoint,
  signer: bearerToken(process.env.TOOL_LEDGER_APPROVER ?? ''),
});

const sendEmail = createTool({
  id: 'send-email',
  description: 'Sends an email',
  inputSchema: z.object({ to: z.string(), body: z.string() }),
  execute: ({ to, body }) => mail.send(to, body),
});

export const support = new Agent({
  id: 'support',
  name: 'Support',
  instructions: 'Answer the customer; send mail when asked.',
  model: 'openai/gpt-5-mini',
  // The run is the memory thread: support.generate(text, { memory: { thread: chatId, resource: userId } }).
  tools: withLedger(ledger, { sendEmail }, { approver, tools: { sendEmail: { requiresApproval: true } } }),
});
