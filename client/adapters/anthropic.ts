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
 * One content block of a Messages response. No index signature, so that every member of the SDK's
 * `ContentBlock` union (text, thinking, tool use, ...) is accepted as it is; only `tool_use` blocks are
 * read.
 */
export interface AnthropicContentBlockLike {
  type: string;
  id?: unknown;
  name?: unknown;
  input?: unknown;
}

/** The part of an Anthropic Messages response the adapter reads; the SDK's `Message` fits it. */
export interface AnthropicMessageLike {
  content: readonly AnthropicContentBlockLike[];
}

/** A tool's input schema as the Messages API requires it: a JSON Schema object whose `type` is `object`. */
export interface AnthropicInputSchema {
  type: 'object';
  properties?: unknown;
  required?: string[];
  [keyword: string]: unknown;
}

/** A `tool_result` content block. */
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  /** Present (true) only for calls that failed. */
  is_error?: true;
}

/** The user message that carries the tool results back. */
export interface ToolResultMessage {
  role: 'user';
  content: ToolResultBlock[];
}

/** An Anthropic tool definition. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: AnthropicInputSchema;
}

/**
 * The `tool_use` blocks of a Messages response, in order (text and thinking blocks are skipped and
 * do not count as positions).
 *
 * @example
 * ```ts
 * anthropicToolUses(message).map((c) => c.providerCallId); // ['toolu_01…', …]
 * ```
 */
export function anthropicToolUses(message: AnthropicMessageLike): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  for (const block of message.content) {
    if (block.type !== 'tool_use') continue;
    const { id, name, input } = block;
    if (typeof id !== 'string' || typeof name !== 'string') {
      throw new TypeError('a tool_use block needs string id and name');
    }
    calls.push({ providerCallId: id, modelName: name, arguments: { valid: true, value: input ?? {} } });
  }
  return calls;
}

/**
 * Runs the `tool_use` blocks of a Messages response through the ledger and returns the user message
 * with one `tool_result` block per call, in order (`is_error: true` where the call failed).
 *
 * @example
 * ```ts
 * const { message: results } = await runAnthropicToolUses(client, message, { agentRunId, step, names });
 * messages.push({ role: 'assistant', content: message.content }, results);
 * ```
 */
export async function runAnthropicToolUses(
  client: ToolCaller,
  message: AnthropicMessageLike,
  context: ToolCallContext,
): Promise<{ message: ToolResultMessage; results: ToolCallResult[] }> {
  const results = await runToolCalls(client, anthropicToolUses(message), context);
  return {
    message: {
      role: 'user',
      content: results.map((result) => {
        const block: ToolResultBlock = {
          type: 'tool_result',
          tool_use_id: result.providerCallId,
          content: result.content,
        };
        if (result.isError) block.is_error = true;
        return block;
      }),
    },
    results,
  };
}

/**
 * Anthropic `tools` for a deployment's tools (`client.tools()`), with model-safe names.
 *
 * @example
 * ```ts
 * await anthropic.messages.create({ model, max_tokens, messages, tools: toAnthropicTools(await client.tools()) });
 * ```
 */
export function toAnthropicTools(
  tools: readonly ToolDescription[],
  names: ToolNameMap = ToolNameMap.fromTools(tools),
): AnthropicTool[] {
  return tools.map((tool) => ({
    name: names.toModel(tool.name),
    description: tool.description,
    input_schema: anthropicInputSchema(modelParameters(tool.input_schema)),
  }));
}

/** Tool argument schemas are zod objects, so `type` is `object` already; stating it satisfies the API's type. */
function anthropicInputSchema(parameters: Record<string, unknown>): AnthropicInputSchema {
  const { required } = parameters;
  const schema: AnthropicInputSchema = { ...parameters, type: 'object' };
  if (required !== undefined && !(Array.isArray(required) && required.every((r) => typeof r === 'string'))) {
    delete schema.required;
  }
  return schema;
}
