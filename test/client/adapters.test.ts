import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AWAITING_APPROVAL_NOTE,
  bearerToken,
  NO_ANSWER_NOTE,
  REPLAY_FAILURE_NOTE,
  REPLAY_NOTE,
  runAnthropicToolUses,
  runChatCompletionToolCalls,
  runResponsesFunctionCalls,
  ToolLedgerClient,
  ToolNameMap,
  type ToolResultEnvelope,
} from '../../client/index';
import anthropicMessage from '../fixtures/anthropic-message.json';
import chatCompletion from '../fixtures/openai-chat-completion.json';
import responsesResponse from '../fixtures/openai-responses.json';
import { fakeLedger } from './support/fake-ledger';
import { fakeClock, type ScriptedServer, startScriptedServer } from './support/scripted-server';

const names = ToolNameMap.fromTools([
  'workspace.write_file',
  'workspace.append_line',
  'workspace.delete_file',
  'webhook.post',
]);

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

/** What the model reads: the envelope, as the exact JSON text the adapter sends. */
function content(envelope: ToolResultEnvelope): string {
  return JSON.stringify(envelope);
}

/** The same response as the model might produce it again: same calls at the same positions, new provider IDs. */
function regenerated<T>(response: T): T {
  return JSON.parse(
    JSON.stringify(response).replace(/"(call|toolu)_([A-Za-z0-9]{10,})"/g, '"$1_regen$2"'),
  ) as T;
}

describe('OpenAI Chat Completions adapter', () => {
  const context = { agentRunId: 'run-7', step: 1, names };
  const [first, second, third, fourth] = chatCompletion.choices[0]!.message.tool_calls;

  it('runs each tool call once and answers with one tool message per call, in order', async () => {
    const { messages } = await runChatCompletionToolCalls(client, chatCompletion, context);
    expect(messages).toEqual([
      {
        role: 'tool',
        tool_call_id: first!.id,
        content: content({
          operation_id: 'run-7:s1:c0',
          state: 'succeeded',
          replayed: false,
          result: { path: 'notes/plan.md', bytes: 17 },
        }),
      },
      {
        role: 'tool',
        tool_call_id: second!.id,
        content: content({
          operation_id: 'run-7:s1:c1',
          state: 'succeeded',
          replayed: false,
          result: { status: 200 },
        }),
      },
      {
        role: 'tool',
        tool_call_id: third!.id,
        content: content({
          operation_id: 'run-7:s1:c2',
          state: 'succeeded',
          replayed: false,
          result: { appended: true },
        }),
      },
      {
        role: 'tool',
        tool_call_id: fourth!.id,
        content: content({
          operation_id: 'run-7:s1:c3',
          state: 'invalid_arguments',
          replayed: false,
          error: { code: 'invalid_arguments_json', message: 'the arguments are not valid JSON; nothing ran' },
        }),
      },
    ]);
    expect(ledger.runs).toEqual(['run-7:s1:c0', 'run-7:s1:c1', 'run-7:s1:c2']);
    const posts = server.requests.filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body));
    expect(posts.map((p) => p.tool).sort()).toEqual([
      'webhook.post',
      'workspace.append_line',
      'workspace.write_file',
    ]);
  });

  it('tells the model that actions of a regenerated response had already been performed', async () => {
    await runChatCompletionToolCalls(client, chatCompletion, context);
    const again = regenerated(chatCompletion);
    const newIds = again.choices[0]!.message.tool_calls.map((c) => c.id);
    expect(newIds[0]).not.toBe(first!.id);

    const { messages } = await runChatCompletionToolCalls(client, again, context);
    expect(messages).toEqual([
      {
        role: 'tool',
        tool_call_id: newIds[0],
        content: content({
          operation_id: 'run-7:s1:c0',
          state: 'succeeded',
          replayed: true,
          note: REPLAY_NOTE,
          result: { path: 'notes/plan.md', bytes: 17 },
        }),
      },
      {
        role: 'tool',
        tool_call_id: newIds[1],
        content: content({
          operation_id: 'run-7:s1:c1',
          state: 'succeeded',
          replayed: true,
          note: REPLAY_NOTE,
          result: { status: 200 },
        }),
      },
      {
        role: 'tool',
        tool_call_id: newIds[2],
        content: content({
          operation_id: 'run-7:s1:c2',
          state: 'succeeded',
          replayed: true,
          note: REPLAY_NOTE,
          result: { appended: true },
        }),
      },
      {
        role: 'tool',
        tool_call_id: newIds[3],
        content: content({
          operation_id: 'run-7:s1:c3',
          state: 'invalid_arguments',
          replayed: false,
          error: { code: 'invalid_arguments_json', message: 'the arguments are not valid JSON; nothing ran' },
        }),
      },
    ]);
    expect(JSON.parse(messages[0]!.content)).toMatchObject({
      replayed: true,
      note: 'this action had already been performed; its original result is returned',
    });
    expect(ledger.runs).toHaveLength(3);
  });

  it('reports a regenerated call with other arguments at the same position as a conflict, and runs nothing', async () => {
    await runChatCompletionToolCalls(client, chatCompletion, context);
    const changed = regenerated(chatCompletion);
    changed.choices[0]!.message.tool_calls[1]!.function.arguments =
      '{"url":"http://127.0.0.1:8787/hooks/other","json":{}}';
    const { messages, results } = await runChatCompletionToolCalls(client, changed, context);
    expect(messages[1]).toEqual({
      role: 'tool',
      tool_call_id: changed.choices[0]!.message.tool_calls[1]!.id,
      content: content({
        operation_id: 'run-7:s1:c1',
        state: 'conflict',
        replayed: false,
        error: {
          code: 'idempotency_key_reused',
          message: 'this call was already made at this step with different arguments; nothing ran',
        },
      }),
    });
    expect(results[1]!.isError).toBe(true);
    expect(ledger.runs).toHaveLength(3);
  });

  it('gives the same response at a later step new operations', async () => {
    await runChatCompletionToolCalls(client, chatCompletion, context);
    const { results } = await runChatCompletionToolCalls(client, chatCompletion, { ...context, step: 2 });
    expect(results.map((r) => [r.operationId, r.envelope.replayed])).toEqual([
      ['run-7:s2:c0', false],
      ['run-7:s2:c1', false],
      ['run-7:s2:c2', false],
      ['run-7:s2:c3', false],
    ]);
  });
});

describe('OpenAI Responses adapter', () => {
  const context = { agentRunId: 'run-8', step: 0, names };

  it('answers function_call items with function_call_output items; failures, approvals and unknown tools are explicit', async () => {
    const { items } = await runResponsesFunctionCalls(client, responsesResponse, context);
    expect(items).toEqual([
      {
        type: 'function_call_output',
        call_id: 'call_5uLbG0wYd8QeVn3Ks1HjR7Tz',
        output: content({
          operation_id: 'run-8:s0:c0',
          state: 'failed_terminal',
          replayed: false,
          error: { code: 'http_status', message: 'the target answered 404', status: 404 },
        }),
      },
      {
        type: 'function_call_output',
        call_id: 'call_2wPcM9eXr4NaTf6Bo8YsK1Lq',
        output: content({
          operation_id: 'run-8:s0:c1',
          state: 'awaiting_approval',
          replayed: false,
          note: AWAITING_APPROVAL_NOTE,
        }),
      },
      {
        type: 'function_call_output',
        call_id: 'call_9kRtH3vZm1QcXe7Ju5WaD2Ng',
        output: content({
          operation_id: 'run-8:s0:c2',
          state: 'refused',
          replayed: false,
          error: { code: 'tool_unknown', message: 'there is no tool of this name; nothing ran' },
        }),
      },
    ]);
    // The approval is not waited for (it needs a person), and the made-up tool was never sent.
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'POST']);
  });

  it('replays a stored failure with a note, so the model does not try the action again', async () => {
    await runResponsesFunctionCalls(client, responsesResponse, context);
    const { items } = await runResponsesFunctionCalls(client, regenerated(responsesResponse), context);
    expect(items[0]).toEqual({
      type: 'function_call_output',
      call_id: 'call_regen5uLbG0wYd8QeVn3Ks1HjR7Tz',
      output: content({
        operation_id: 'run-8:s0:c0',
        state: 'failed_terminal',
        replayed: true,
        note: REPLAY_FAILURE_NOTE,
        error: { code: 'http_status', message: 'the target answered 404', status: 404 },
      }),
    });
    expect(ledger.runs).toEqual(['run-8:s0:c0', 'run-8:s0:c1']);
  });
});

describe('Anthropic Messages adapter', () => {
  const context = { agentRunId: 'run-9', step: 4, names };

  it('answers tool_use blocks with one user message of tool_result blocks, is_error where a call failed', async () => {
    const { message } = await runAnthropicToolUses(client, anthropicMessage, context);
    expect(message).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01A09q90qw90lq917835lq9',
          content: content({
            operation_id: 'run-9:s4:c0',
            state: 'refused',
            replayed: false,
            error: {
              code: 'validation_failed',
              message: 'the arguments do not match the tool schema',
              issues: [{ path: 'path', message: 'must be a relative path' }],
            },
          }),
          is_error: true,
        },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01B7k2mXcQpL4tRw9zNv5aHs',
          content: content({
            operation_id: 'run-9:s4:c1',
            state: 'succeeded',
            replayed: false,
            result: { status: 200 },
          }),
        },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01C3n8pYdRqM5uSx0aOw6bJt',
          content: content({
            operation_id: 'run-9:s4:c2',
            state: 'succeeded',
            replayed: false,
            result: { path: 'notes/release.md', bytes: 6 },
          }),
        },
      ],
    });
  });

  it('marks replays when the same turn is replayed', async () => {
    await runAnthropicToolUses(client, anthropicMessage, context);
    const { message } = await runAnthropicToolUses(client, regenerated(anthropicMessage), context);
    expect(message.content.slice(1)).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_regen01B7k2mXcQpL4tRw9zNv5aHs',
        content: content({
          operation_id: 'run-9:s4:c1',
          state: 'succeeded',
          replayed: true,
          note: REPLAY_NOTE,
          result: { status: 200 },
        }),
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_regen01C3n8pYdRqM5uSx0aOw6bJt',
        content: content({
          operation_id: 'run-9:s4:c2',
          state: 'succeeded',
          replayed: true,
          note: REPLAY_NOTE,
          result: { path: 'notes/release.md', bytes: 6 },
        }),
      },
    ]);
    expect(ledger.runs).toEqual(['run-9:s4:c1', 'run-9:s4:c2']);
  });

  it('tells the model when the ledger gave no answer in time, without an operation result', async () => {
    const busy = await startScriptedServer(() => ({
      status: 409,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '2' },
      json: { code: 'operation_in_progress', title: 'operation in progress', status: 409 },
    }));
    try {
      const slow = new ToolLedgerClient({
        endpoint: busy.url,
        clock: fakeClock(),
        random: () => 0.5,
        deadlineMs: 5_000,
      });
      const { message } = await runAnthropicToolUses(
        slow,
        { content: [anthropicMessage.content[2]!] },
        { ...context, sequential: true },
      );
      expect(message.content).toEqual([
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01B7k2mXcQpL4tRw9zNv5aHs',
          content: content({
            operation_id: 'run-9:s4:c0',
            state: 'no_answer',
            replayed: false,
            note: NO_ANSWER_NOTE,
            error: { code: 'deadline_exceeded', message: 'no answer before the deadline' },
          }),
          is_error: true,
        },
      ]);
    } finally {
      await busy.close();
    }
  });
});
