import type { ModelMessage, Tool, ToolExecuteFunction, ToolSet } from 'ai';
import {
  assistantMessagesIn,
  type FrameworkToolCall,
  frameworkOperationId,
  isLedgerEnvelope,
  type LedgerRunner,
  type LedgerToolOptions,
  planTools,
  runLedgerToolCall,
  type ToolPlan,
  type WithLedgerOptions,
} from './framework-common';
import type { ToolResultEnvelope } from './result-envelope';

/**
 * The Vercel AI SDK's tools (`ai`, major 7) mapped onto `ledger.run`: a `ToolSet` in, a `ToolSet` out,
 * for `generateText`, `streamText`, `ToolLoopAgent` and their multi-step loop.
 *
 * Where a call sits (what its default operation ID is made of):
 * - the step: the assistant messages in the `messages` the SDK hands the tool (those sent to the model
 *   for the response that holds the call), so the same conversation gives the same step;
 * - the position: the call's place among the response's calls to the same tool. The SDK announces every
 *   call of a response through `onInputAvailable`, in the response's order, before it executes any;
 *   the adapter notes the order there, per step (the `messages` array) and tool.
 * - a call the SDK executes after a person approved it, on the next request, is already in the
 *   conversation: its assistant message gives the step and the position, and the approval response
 *   there says a person approved it.
 */

/** A tool call of the AI SDK as `options.operationId` sees it. */
export interface AiSdkToolCall extends FrameworkToolCall {
  /** The provider's tool-call ID (`frameworkCallId` too). */
  toolCallId: string;
  /** The messages sent to the model for the response that holds the call. */
  messages: readonly ModelMessage[];
}

/** A tool's own output type (`InferToolOutput` without its constraint, which strict consumers' checks trip on). */
type OutputOf<TOOL> = TOOL extends Tool<infer _INPUT, infer OUTPUT, infer _CONTEXT> ? OUTPUT : unknown;

/**
 * `withLedger`'s options for AI SDK tools: the read tools and the per-tool options are keyed by the
 * set's own names (a name that is no tool does not compile).
 */
export interface AiSdkLedgerOptions<TOOLS extends ToolSet, READ extends keyof TOOLS & string = never>
  extends WithLedgerOptions<AiSdkToolCall> {
  /** The tools that only read: returned untouched. */
  read?: readonly READ[];
  /** Ledger options per write tool: `reconcile`, `downstreamIdempotent`, `requiresApproval`, `name`… */
  tools?: { [K in Exclude<keyof TOOLS & string, READ>]?: LedgerToolOptions<OutputOf<TOOLS[K]>> };
}

/** `withLedger`'s options for one AI SDK tool: the common options and the tool's own, side by side. */
export interface AiSdkSingleToolOptions<TOOL extends Tool>
  extends Omit<WithLedgerOptions<AiSdkToolCall>, 'read'>,
    LedgerToolOptions<OutputOf<TOOL>> {
  /** The name the tool has in its `ToolSet`: the name the model calls it by. */
  toolName: string;
}

/**
 * A wrapped tool: the same tool, whose output is its own on a call that ran the effect, or the envelope
 * the model is told otherwise (a replay, a conflict, a wait for approval, an unknown outcome).
 */
export type LedgerTool<TOOL> =
  TOOL extends Tool<infer INPUT, infer OUTPUT, infer CONTEXT>
    ? Tool<INPUT, OUTPUT | ToolResultEnvelope, CONTEXT>
    : TOOL;

/** A wrapped `ToolSet`: the write tools' outputs may be envelopes; read tools and tools without `execute` are untouched. */
export type LedgerToolSet<TOOLS extends ToolSet, READ extends keyof TOOLS = never> = {
  [K in keyof TOOLS]: K extends READ
    ? TOOLS[K]
    : TOOLS[K] extends { execute: ToolExecuteFunction<infer _I, infer _O, infer _C> }
      ? LedgerTool<TOOLS[K]>
      : TOOLS[K];
};

/** The calls the SDK has announced (`onInputAvailable`), per step (its `messages` array) and tool. */
const announced = new WeakMap<readonly ModelMessage[], Map<string, string[]>>();

/**
 * Runs every write tool of a `ToolSet` through the ledger: each call becomes one operation, executed at
 * most once; a re-run of the same step (same conversation, after a crash or a retry) replays it, and
 * the model is told it did (`replayed: true`). The tools named in `read` and tools without an `execute`
 * are returned untouched.
 *
 * The SDK's approval (`toolApproval`, or a tool's `needsApproval`) works as before; with an `approver`
 * the answer a person gives is recorded in the ledger, bound to the call's ID and digest, and a tool
 * with `requiresApproval` asks through it.
 *
 * @throws TypeError at once for options that name no tool, a tool without a valid ledger name, or no
 * `runId` / `operationId`.
 * @example
 * ```ts
 * const tools = withLedger(ledger, { sendEmail, searchDocs }, { runId: chatId, read: ['searchDocs'] });
 * const result = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
 * ```
 */
export function withLedger<TOOLS extends ToolSet, const READ extends keyof TOOLS & string = never>(
  ledger: LedgerRunner,
  tools: TOOLS,
  options: AiSdkLedgerOptions<TOOLS, READ>,
): LedgerToolSet<TOOLS, READ>;
/**
 * One tool on its own: `toolName` is the name you give it in the `ToolSet` (the name the model calls
 * it by), and its ledger options sit beside the common ones.
 *
 * @example
 * ```ts
 * const tools = { sendEmail: withLedger(ledger, sendEmail, { toolName: 'sendEmail', runId: chatId }), searchDocs };
 * ```
 */
export function withLedger<TOOL extends Tool>(
  ledger: LedgerRunner,
  tool: TOOL,
  options: AiSdkSingleToolOptions<TOOL>,
): LedgerTool<TOOL>;
export function withLedger(
  ledger: LedgerRunner,
  toolsOrTool: ToolSet | Tool,
  options: AiSdkLedgerOptions<ToolSet, string> | AiSdkSingleToolOptions<Tool>,
): unknown {
  if (typeof toolsOrTool !== 'object' || toolsOrTool === null) {
    throw new TypeError('withLedger needs a ToolSet or a tool');
  }
  if (typeof options === 'object' && options !== null && 'toolName' in options) {
    const { toolName, runId, scope, operationId, approver, ...own } = options;
    if (typeof toolName !== 'string' || toolName.length === 0) {
      throw new TypeError('options.toolName must be the name the tool has in its ToolSet');
    }
    const common: WithLedgerOptions<AiSdkToolCall> = {};
    if (runId !== undefined) common.runId = runId;
    if (scope !== undefined) common.scope = scope;
    if (operationId !== undefined) common.operationId = operationId;
    if (approver !== undefined) common.approver = approver;
    return wrapSet(ledger, { [toolName]: toolsOrTool as Tool }, { ...common, tools: { [toolName]: own } })[
      toolName
    ];
  }
  return wrapSet(ledger, toolsOrTool as ToolSet, options as AiSdkLedgerOptions<ToolSet, string>);
}

function wrapSet(
  ledger: LedgerRunner,
  tools: ToolSet,
  options: AiSdkLedgerOptions<ToolSet, string>,
): Record<string, unknown> {
  const names = Object.keys(tools);
  const executable = names.filter((name) => typeof tools[name]?.execute === 'function');
  const plans = planTools(executable, names, options);
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const plan = plans.get(name);
    out[name] =
      plan?.effect === 'write' ? wrapTool(ledger, name, tools[name] as Tool, plan, options) : tools[name];
  }
  return out;
}

function wrapTool(
  ledger: LedgerRunner,
  name: string,
  tool: Tool,
  plan: Extract<ToolPlan, { effect: 'write' }>,
  options: WithLedgerOptions<AiSdkToolCall>,
): Tool {
  const own = tool.execute as ToolExecuteFunction<unknown, unknown, unknown>;
  const wrapped: Tool = {
    ...tool,
    onInputAvailable: async (event) => {
      announce(event.messages, name, event.toolCallId);
      await tool.onInputAvailable?.(event);
    },
    execute: async (input, execution) => {
      const place = placeOf(execution.messages, name, execution.toolCallId);
      const call: AiSdkToolCall = {
        toolName: name,
        ledgerTool: plan.ledgerTool,
        input,
        runId: options.runId,
        step: place.step,
        callIndex: place.callIndex,
        frameworkCallId: execution.toolCallId,
        toolCallId: execution.toolCallId,
        messages: execution.messages,
      };
      const result = await runLedgerToolCall(ledger, options.approver, {
        operationId: frameworkOperationId(call, options),
        ledgerTool: plan.ledgerTool,
        input,
        runId: options.runId,
        options: plan.options,
        signal: execution.abortSignal,
        approvedInFramework: place.approvedByPerson,
        execute: (ctx) => lastValue(own(input, { ...execution, abortSignal: ctx.signal })),
      });
      return result.kind === 'executed' ? result.value : result.model.envelope;
    },
  };
  // A tool the ledger holds for approval asks through the SDK's own flow when its answer can be recorded.
  if (
    plan.options.requiresApproval === true &&
    options.approver !== undefined &&
    tool.needsApproval == null
  ) {
    wrapped.needsApproval = true;
  }
  // The tool's own output transform never sees an envelope: the model reads the envelope as it is.
  const toModelOutput = tool.toModelOutput;
  if (toModelOutput !== undefined) {
    wrapped.toModelOutput = (event) =>
      isLedgerEnvelope(event.output)
        ? { type: 'json', value: JSON.parse(JSON.stringify(event.output)) }
        : toModelOutput(event);
  }
  return wrapped;
}

function announce(messages: readonly ModelMessage[], tool: string, toolCallId: string): void {
  let byTool = announced.get(messages);
  if (byTool === undefined) {
    byTool = new Map();
    announced.set(messages, byTool);
  }
  const calls = byTool.get(tool) ?? [];
  if (!calls.includes(toolCallId)) calls.push(toolCallId);
  byTool.set(tool, calls);
}

/** Where a call sits: its step, its position among the step's calls to this tool, and whether a person approved it. */
interface Place {
  step: number;
  callIndex: number;
  approvedByPerson: boolean;
}

/**
 * The call's place: announced in this step (a call of the response being handled), or found in the
 * conversation (a call the SDK runs after its approval, on the request that carries the answer).
 */
function placeOf(messages: readonly ModelMessage[], tool: string, toolCallId: string): Place {
  const callIndex = announced.get(messages)?.get(tool)?.indexOf(toolCallId) ?? -1;
  if (callIndex >= 0) return { step: assistantMessagesIn(messages), callIndex, approvedByPerson: false };
  let step = 0;
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    if (typeof message.content !== 'string') {
      const sameTool = message.content.filter((part) => part.type === 'tool-call' && part.toolName === tool);
      const index = sameTool.findIndex((part) => part.type === 'tool-call' && part.toolCallId === toolCallId);
      if (index >= 0)
        return { step, callIndex: index, approvedByPerson: approvedByPerson(messages, toolCallId) };
    }
    step++;
  }
  throw new TypeError(
    `the call ${toolCallId} to ${tool} is neither announced in this step nor in the conversation, so it has ` +
      'no stable place: run the tool through the AI SDK (generateText, streamText, an Agent), or pass ' +
      'options.operationId',
  );
}

/** True when the conversation holds a person's approval of the call (an automatic one is not a person's). */
function approvedByPerson(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const requests = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (
        part.type === 'tool-approval-request' &&
        part.toolCallId === toolCallId &&
        part.isAutomatic !== true
      ) {
        requests.add(part.approvalId);
      }
    }
  }
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-approval-response' && requests.has(part.approvalId) && part.approved)
        return true;
    }
  }
  return false;
}

/** The value a tool's `execute` settles on: a streaming tool's last output, or the value itself. */
async function lastValue<T>(produced: AsyncIterable<T> | PromiseLike<T> | T): Promise<T> {
  if (typeof produced === 'object' && produced !== null && Symbol.asyncIterator in produced) {
    let last: T | undefined;
    for await (const value of produced as AsyncIterable<T>) last = value;
    return last as T;
  }
  return await produced;
}
