import {
  bearerToken,
  runChatCompletionToolCalls,
  ToolLedgerClient,
  ToolNameMap,
  toChatCompletionTools,
} from '@tool-ledger/client';
import type OpenAI from 'openai';

const ledger = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.TOKEN!),
});

// #region docs
const tools = await ledger.tools();
const names = ToolNameMap.fromTools(tools); // webhook.post <-> webhook_post
const completion = await openai.chat.completions.create({
  model,
  messages,
  tools: toChatCompletionTools(tools, names),
});
const run = { agentRunId: 'run-42', step: 3, names };
const { messages: results } = await runChatCompletionToolCalls(ledger, completion, run);
messages.push(completion.choices[0]!.message, ...results);
// #endregion docs

declare const openai: OpenAI;
declare const model: string;
declare const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[];
