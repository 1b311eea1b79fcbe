import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bearerToken,
  runAnthropicToolUses,
  runChatCompletionToolCalls,
  runResponsesFunctionCalls,
  type ToolDescription,
  ToolLedgerClient,
  ToolNameMap,
  toAnthropicTools,
  toChatCompletionTools,
  toResponsesTools,
} from '../../client/index';
import { fakeLedger } from './support/fake-ledger';
import { fakeClock, type ScriptedServer, startScriptedServer } from './support/scripted-server';

/*
 * The adapters take the model SDKs' own response objects and give back values the SDKs accept as request
 * parameters, with no cast on either side. Type-checking this file (part of `npm test`) is the type-level
 * test: every annotation below is an SDK type, and the values are built as the SDKs declare them.
 */

const described: ToolDescription[] = [
  {
    name: 'workspace.write_file',
    description: 'Writes a file under the workspace root.',
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    effect: 'write',
    requires_approval: false,
    timeout_ms: 10_000,
    max_attempts: 3,
  },
];
const names = ToolNameMap.fromTools(described);

let server: ScriptedServer;
let ledger: ReturnType<typeof fakeLedger>;
let client: ToolLedgerClient;

beforeEach(async () => {
  ledger = fakeLedger();
  server = await startScriptedServer(ledger.script);
  client = new ToolLedgerClient({
    endpoint: server.url,
    signer: bearerToken('dev-token'),
    clock: fakeClock(),
    random: () => 0.5,
  });
});
afterEach(async () => {
  await server.close();
});

const writeArgs = JSON.stringify({ path: 'notes/a.md', content: 'hello' });

describe('adapters accept the OpenAI SDK types as they are', () => {
  it('a ChatCompletion with a function call and a custom tool call: the function call runs, the custom one is skipped', async () => {
    const completion: OpenAI.Chat.Completions.ChatCompletion = {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1_735_787_050,
      model: 'gpt-4.1',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          logprobs: null,
          message: {
            role: 'assistant',
            content: null,
            refusal: null,
            tool_calls: [
              {
                id: 'call_fn1',
                type: 'function',
                function: { name: 'workspace_write_file', arguments: writeArgs },
              },
              { id: 'call_custom1', type: 'custom', custom: { name: 'grammar_tool', input: 'x' } },
            ],
          },
        },
      ],
    };
    const { messages } = await runChatCompletionToolCalls(client, completion, {
      agentRunId: 'sdk-1',
      step: 1,
      names,
    });
    const next: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      completion.choices[0]!.message,
      ...messages,
    ];
    expect(next).toHaveLength(2);
    expect(messages.map((m) => m.tool_call_id)).toEqual(['call_fn1']);
    expect(ledger.runs).toEqual(['sdk-1:s1:c0']);

    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = toChatCompletionTools(described, names);
    expect(tools[0]).toMatchObject({ type: 'function', function: { name: 'workspace_write_file' } });
  });

  it('a Responses API Response with reasoning, a message and a function call: only the call runs', async () => {
    const response = {
      id: 'resp_1',
      object: 'response',
      access_programs: null,
      created_at: 1_735_787_050,
      model: 'gpt-4.1',
      status: 'completed',
      output_text: '',
      error: null,
      incomplete_details: null,
      instructions: null,
      metadata: null,
      parallel_tool_calls: true,
      temperature: null,
      tool_choice: 'auto',
      tools: [],
      top_p: null,
      output: [
        { type: 'reasoning', id: 'rs_1', summary: [] },
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Writing the note.', annotations: [] }],
        },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_r1',
          name: 'workspace_write_file',
          arguments: writeArgs,
          status: 'completed',
        },
      ],
    } satisfies OpenAI.Responses.Response;
    const typed: OpenAI.Responses.Response = response;
    const { items } = await runResponsesFunctionCalls(client, typed, { agentRunId: 'sdk-2', step: 1, names });
    const input: OpenAI.Responses.ResponseInputItem[] = items;
    expect(input).toEqual([expect.objectContaining({ type: 'function_call_output', call_id: 'call_r1' })]);
    expect(ledger.runs).toEqual(['sdk-2:s1:c0']);

    const tools: OpenAI.Responses.Tool[] = toResponsesTools(described, names);
    expect(tools[0]).toMatchObject({ type: 'function', name: 'workspace_write_file', strict: false });
  });
});

describe('adapters accept the Anthropic SDK types as they are', () => {
  it('a Message with a text block and a tool_use block: the tool use runs, the result message is a MessageParam', async () => {
    const message: Anthropic.Messages.Message = {
      id: 'msg_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      stop_reason: 'tool_use',
      stop_sequence: null,
      container: null,
      stop_details: null,
      diagnostics: null,
      usage: {
        input_tokens: 10,
        output_tokens: 10,
        cache_creation: null,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
        inference_geo: null,
        server_tool_use: null,
        service_tier: null,
        output_tokens_details: null,
        speed: null,
      },
      content: [
        { type: 'text', text: 'I will write the note.', citations: null },
        {
          type: 'tool_use',
          id: 'toolu_01',
          name: 'workspace_write_file',
          input: { path: 'notes/a.md', content: 'hello' },
          caller: { type: 'direct' },
        },
      ],
    };
    const { message: results } = await runAnthropicToolUses(client, message, {
      agentRunId: 'sdk-3',
      step: 1,
      names,
    });
    const next: Anthropic.Messages.MessageParam[] = [
      { role: 'assistant', content: message.content },
      results,
    ];
    expect(next).toHaveLength(2);
    expect(results.content.map((b) => b.tool_use_id)).toEqual(['toolu_01']);
    expect(ledger.runs).toEqual(['sdk-3:s1:c0']);

    const tools: Anthropic.Messages.Tool[] = toAnthropicTools(described, names);
    expect(tools[0]?.input_schema.type).toBe('object');
    expect(tools[0]?.input_schema.required).toEqual(['path', 'content']);
  });
});
