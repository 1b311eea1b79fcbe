import type { ToolDescription } from '../api-types';
import { modelParameters, ToolNameMap } from './model-tools';
import {
  type ModelToolCall,
  runToolCalls,
  type ToolCallContext,
  type ToolCaller,
  type ToolCallResult,
} from './run-tool-calls';

/**
 * One entry of `message.tool_calls`. Structural, so that the SDK's `ChatCompletionMessageToolCall` (a
 * union of function and custom tool calls) is accepted as it is: custom tool calls have no `function`
 * and are skipped, because a deployment's tools are all function tools.
 */
export interface ChatCompletionToolCallLike {
  id: string;
  type?: string;
  function?: { name: string; arguments: string };
}

/** The part of a Chat Completions response the adapter reads; the SDK's `ChatCompletion` fits it. */
export interface ChatCompletionLike {
  choices: readonly {
    message: {
      tool_calls?: readonly ChatCompletionToolCallLike[] | null | undefined;
    };
  }[];
}

/** A Chat Completions tool message (`role: 'tool'`). */
export interface ChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

/**
 * One item of a Responses API `output`. No index signature, so that every member of the SDK's
 * `ResponseOutputItem` union (messages, reasoning, function calls, ...) is accepted as it is; only
 * `function_call` items are read.
 */
export interface ResponsesOutputItemLike {
  type: string;
  call_id?: unknown;
  name?: unknown;
  arguments?: unknown;
}

/** The part of a Responses API response the adapter reads; the SDK's `Response` fits it. */
export interface ResponsesLike {
  output: readonly ResponsesOutputItemLike[];
}

/** A Responses API `function_call_output` input item. */
export interface FunctionCallOutputItem {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** A Chat Completions tool definition. */
export interface ChatCompletionTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A Responses API function tool definition. */
export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: false;
}

/**
 * The tool calls of a Chat Completions response (`choices[0].message.tool_calls`), in order.
 *
 * @example
 * ```ts
 * chatCompletionToolCalls(completion).length; // how many parallel calls the model made
 * ```
 */
export function chatCompletionToolCalls(response: ChatCompletionLike): ModelToolCall[] {
  const calls = response.choices[0]?.message.tool_calls ?? [];
  const result: ModelToolCall[] = [];
  for (const call of calls) {
    if ((call.type !== undefined && call.type !== 'function') || call.function === undefined) continue;
    result.push({
      providerCallId: call.id,
      modelName: call.function.name,
      arguments: parseArguments(call.function.arguments),
    });
  }
  return result;
}

/**
 * Runs the tool calls of a Chat Completions response through the ledger and returns the `tool`
 * messages to append to the conversation, one per call, in order.
 *
 * @example
 * ```ts
 * const { messages } = await runChatCompletionToolCalls(client, completion, { agentRunId, step, names });
 * conversation.push(completion.choices[0].message, ...messages);
 * ```
 */
export async function runChatCompletionToolCalls(
  client: ToolCaller,
  response: ChatCompletionLike,
  context: ToolCallContext,
): Promise<{ messages: ChatToolMessage[]; results: ToolCallResult[] }> {
  const results = await runToolCalls(client, chatCompletionToolCalls(response), context);
  return {
    messages: results.map((result) => ({
      role: 'tool',
      tool_call_id: result.providerCallId,
      content: result.content,
    })),
    results,
  };
}

/**
 * The `function_call` items of a Responses API response, in order (reasoning and message items are
 * skipped and do not count as positions).
 *
 * @example
 * ```ts
 * responsesFunctionCalls(response).map((c) => c.modelName);
 * ```
 */
export function responsesFunctionCalls(response: ResponsesLike): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  for (const item of response.output) {
    if (item.type !== 'function_call') continue;
    const { call_id: callId, name, arguments: args } = item;
    if (typeof callId !== 'string' || typeof name !== 'string' || typeof args !== 'string') {
      throw new TypeError('a function_call item needs string call_id, name and arguments');
    }
    calls.push({ providerCallId: callId, modelName: name, arguments: parseArguments(args) });
  }
  return calls;
}

/**
 * Runs the function calls of a Responses API response through the ledger and returns the
 * `function_call_output` items for the next request's `input`, in order.
 *
 * @example
 * ```ts
 * const { items } = await runResponsesFunctionCalls(client, response, { agentRunId, step, names });
 * await openai.responses.create({ model, previous_response_id: response.id, input: items, tools });
 * ```
 */
export async function runResponsesFunctionCalls(
  client: ToolCaller,
  response: ResponsesLike,
  context: ToolCallContext,
): Promise<{ items: FunctionCallOutputItem[]; results: ToolCallResult[] }> {
  const results = await runToolCalls(client, responsesFunctionCalls(response), context);
  return {
    items: results.map((result) => ({
      type: 'function_call_output',
      call_id: result.providerCallId,
      output: result.content,
    })),
    results,
  };
}

/**
 * Chat Completions `tools` for a deployment's tools (`client.tools()`), with model-safe names.
 *
 * @example
 * ```ts
 * const described = await client.tools();
 * const names = ToolNameMap.fromTools(described);
 * await openai.chat.completions.create({ model, messages, tools: toChatCompletionTools(described, names) });
 * ```
 */
export function toChatCompletionTools(
  tools: readonly ToolDescription[],
  names: ToolNameMap = ToolNameMap.fromTools(tools),
): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: names.toModel(tool.name),
      description: tool.description,
      parameters: modelParameters(tool.input_schema),
    },
  }));
}

/**
 * Responses API `tools` for a deployment's tools. `strict` is off: strict mode requires every
 * property to be required, which optional arguments (e.g. `webhook.post`'s `headers`) are not.
 *
 * @example
 * ```ts
 * await openai.responses.create({ model, input, tools: toResponsesTools(await client.tools()) });
 * ```
 */
export function toResponsesTools(
  tools: readonly ToolDescription[],
  names: ToolNameMap = ToolNameMap.fromTools(tools),
): ResponsesFunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: names.toModel(tool.name),
    description: tool.description,
    parameters: modelParameters(tool.input_schema),
    strict: false,
  }));
}

/** OpenAI sends arguments as JSON text, which a model can get wrong; such a call runs nothing. */
function parseArguments(text: string): ModelToolCall['arguments'] {
  try {
    return { valid: true, value: JSON.parse(text) };
  } catch {
    return { valid: false };
  }
}
