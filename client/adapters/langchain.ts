import type { ToolCall } from '@langchain/core/messages/tool';
import type { StructuredToolInterface, ToolRunnableConfig } from '@langchain/core/tools';
import {
  type FrameworkToolCall,
  frameworkOperationId,
  type LedgerRunner,
  type LedgerToolOptions,
  type LedgerToolResult,
  planTools,
  runLedgerToolCall,
  type WithLedgerOptions,
} from './framework-common';

/**
 * LangChain.js tools (`@langchain/core`) mapped onto `ledger.run`: tools in, the same tools out (each
 * write tool a copy whose `_call` runs through the ledger), for a LangGraph `ToolNode` and for
 * `model.bindTools` alike.
 *
 * Where a call sits (what its default operation ID is made of), all from state the graph's checkpointer
 * keeps, so a step the graph re-runs from its checkpoint (after a crash, a failed node, an interrupt)
 * derives the same IDs:
 * - the run: `options.runId`, or the graph's thread (`configurable.thread_id`);
 * - the step: the AI messages in the graph state before the one that holds the call (a `ToolNode` hands
 *   each tool the state it runs on);
 * - the position: the call's place among that message's calls to the same tool;
 * - a `ToolNode` in a subgraph adds the subgraph's node path (`agent/…`) in front, so a subgraph's
 *   messages never name the same operation as its parent's.
 *
 * A tool that requires approval, given an `approver`, asks through LangGraph's own human-in-the-loop
 * flow: the call is held in the ledger (`awaiting_approval`, so the ledger's approvers see it too), the
 * graph is interrupted with a {@link LedgerApprovalRequest}; the application resumes it with
 * `new Command({ resume: { approved: true } })` (or `false`), and the answer is recorded in the ledger,
 * bound to the call's ID and digest, before anything runs. A call the ledger has already settled is
 * never asked about again.
 */

/** A tool call as `options.operationId` sees it. */
export interface LangChainToolCall extends FrameworkToolCall {
  /** The tool call as LangChain hands it to the tool (`config.toolCall`); its `id` is the model's. */
  toolCall: ToolCall;
  /** The config the tool ran with (LangGraph's runtime: thread, checkpoint namespace, state). */
  config: ToolRunnableConfig;
}

/** `withLedger`'s options for LangChain tools, with the per-tool options keyed by the tools' names. */
export interface LangChainLedgerOptions extends WithLedgerOptions<LangChainToolCall> {
  /**
   * The run the tools act for, the same when a step is re-run. @default the graph's thread
   * (`configurable.thread_id`), which the checkpointer keeps
   */
  runId?: string;
  /** Ledger options per write tool's name: `reconcile`, `requiresApproval`, `downstreamIdempotent`… */
  tools?: Readonly<Record<string, LedgerToolOptions | undefined>>;
}

/** What a tool that requires approval hands LangGraph's `interrupt`: the call a person decides on. */
export interface LedgerApprovalRequest {
  type: 'tool-ledger/approval';
  operation_id: string;
  /** The ledger tool name. */
  tool: string;
  /** The arguments as the tool's schema normalized them. */
  arguments: unknown;
  /** The digest the ledger computed from them, which the recorded approval is bound to. */
  arguments_digest: string;
}

/** How the application resumes an approval interrupt: `true` / `{ approved: true }`, anything else rejects. */
export type LedgerApprovalAnswer = boolean | { approved: boolean };

/** The protected member every LangChain tool class runs its work in, with the arguments it receives. */
interface CallableTool {
  name: string;
  responseFormat?: string;
  _call(input: unknown, runManager: unknown, config?: ToolRunnableConfig): Promise<unknown>;
}

/** LangGraph's runtime members a `ToolNode` puts in the tool's config, next to LangChain's own. */
interface GraphRuntime {
  state?: unknown;
  interrupt?: (value: unknown) => unknown;
}

/**
 * Runs every write tool through the ledger: each call becomes one operation, executed at most once; a
 * step the graph re-runs (same thread, from its checkpoint) replays it, and the model is told it did
 * (`replayed: true`). Tools named in `options.read` are returned as they are.
 *
 * @throws TypeError at once for options that name no tool, a tool without a valid ledger name, or a
 * write tool that is not a LangChain tool class (no `_call`).
 * @example
 * ```ts
 * const tools = withLedger(ledger, [refund, lookup], { read: ['lookup'] });
 * const graph = new StateGraph(MessagesAnnotation)
 *   .addNode('agent', callModel)
 *   .addNode('tools', new ToolNode(tools))
 *   // …
 *   .compile({ checkpointer });
 * ```
 */
export function withLedger<TOOLS extends readonly StructuredToolInterface[]>(
  ledger: LedgerRunner,
  tools: TOOLS,
  options: LangChainLedgerOptions,
): TOOLS {
  if (!Array.isArray(tools)) throw new TypeError('withLedger needs an array of LangChain tools');
  const names = tools.map((tool) => tool.name);
  const plans = planTools(names, names, options, 'framework');
  if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId.length === 0)) {
    throw new TypeError('options.runId, when given, must be a non-empty string');
  }
  return tools.map((tool) => {
    const plan = plans.get(tool.name);
    if (plan?.effect !== 'write') return tool;
    return wrapTool(ledger, tool, plan.ledgerTool, plan.options, options);
  }) as unknown as TOOLS;
}

function wrapTool<TOOL extends StructuredToolInterface>(
  ledger: LedgerRunner,
  tool: TOOL,
  ledgerTool: string,
  toolOptions: LedgerToolOptions,
  options: LangChainLedgerOptions,
): TOOL {
  const own = (tool as unknown as Partial<CallableTool>)._call;
  if (typeof own !== 'function') {
    throw new TypeError(
      `tool ${tool.name} is not a LangChain tool class (no _call); name it in options.read`,
    );
  }
  // Asks through LangGraph's interrupt when the answer can be recorded.
  const asks = toolOptions.requiresApproval === true && options.approver !== undefined;
  // A copy of the same class: every other member (schema, name, response format, callbacks) is the tool's.
  const wrapped = Object.assign(Object.create(Object.getPrototypeOf(tool)), tool) as CallableTool;
  wrapped._call = async function ledgerCall(this: CallableTool, input, runManager, config = {}) {
    const toolCall = config.toolCall;
    if (toolCall === undefined) {
      throw new TypeError(
        `tool ${tool.name} was called without a tool call, so its call has no stable place: run it from a ` +
          "ToolNode or invoke it with the model's tool call, or pass options.operationId",
      );
    }
    const runtime = config as ToolRunnableConfig & GraphRuntime;
    const place = placeOf(runtime.state, toolCall);
    const configurable = config.configurable as Record<string, unknown> | undefined;
    const threadId = configurable?.thread_id;
    const call: LangChainToolCall = {
      toolName: tool.name,
      ledgerTool,
      input,
      runId: options.runId ?? (typeof threadId === 'string' && threadId.length > 0 ? threadId : undefined),
      step: place?.step ?? -1,
      callIndex: place?.callIndex ?? -1,
      frameworkCallId: toolCall.id,
      toolCall,
      config,
    };
    if (options.operationId === undefined && place === undefined) {
      throw new TypeError(
        `the call ${toolCall.id ?? '(no id)'} to ${tool.name} is not in the graph state the tool ran on, so ` +
          'it has no stable place: run the tool from a LangGraph ToolNode, or pass options.operationId',
      );
    }
    const scope = [options.scope, graphPath(configurable?.checkpoint_ns)].filter(
      (part) => part !== undefined,
    );
    const operationId = frameworkOperationId(call, {
      operationId: options.operationId,
      scope: scope.length > 0 ? scope.join('/') : undefined,
    });

    const base = {
      operationId,
      ledgerTool,
      input,
      runId: call.runId,
      options: toolOptions,
      signal: config.signal,
      execute: (ctx: { signal: AbortSignal }) =>
        own.call(this, input, runManager, { ...config, signal: ctx.signal }),
    };
    const answer = (result: LedgerToolResult<unknown>) => {
      if (result.kind === 'executed') return result.value;
      // A tool that returns [content, artifact] keeps that shape: the text for the model, the envelope beside it.
      return this.responseFormat === 'content_and_artifact'
        ? [result.model.content, result.model.envelope]
        : result.model.content;
    };
    if (!asks || typeof runtime.interrupt !== 'function') {
      return answer(await runLedgerToolCall(ledger, options.approver, base));
    }
    // Held for approval first: a call the ledger already settled (a replay, a conflict) or one an approver
    // already let through never interrupts; a held one asks the person, with the digest being approved.
    const held = await runLedgerToolCall(ledger, options.approver, {
      ...base,
      options: { ...toolOptions, requiresApproval: true, wait: false },
    });
    if (held.kind === 'executed' || held.outcome?.operation.state !== 'awaiting_approval')
      return answer(held);
    const request: LedgerApprovalRequest = {
      type: 'tool-ledger/approval',
      operation_id: operationId,
      tool: ledgerTool,
      arguments: input,
      arguments_digest: held.outcome.operation.arguments_digest,
    };
    // The first time, LangGraph stops the graph here; resumed, `interrupt` returns the person's answer.
    const approved = isApproved(runtime.interrupt(request));
    return answer(
      await runLedgerToolCall(ledger, options.approver, {
        ...base,
        approvedInFramework: approved,
        rejectedInFramework: !approved,
      }),
    );
  };
  return wrapped as unknown as TOOL;
}

/** A message as the graph state holds it, as far as the adapter reads it. */
interface MessageLike {
  getType?(): string;
  type?: string;
  tool_calls?: { id?: string; name: string }[];
}

/**
 * The call's place in the state the tool ran on: the AI messages before the one that holds it, and its
 * position among that message's calls to the same tool. `undefined` when the state does not hold it.
 */
function placeOf(state: unknown, toolCall: ToolCall): { step: number; callIndex: number } | undefined {
  const messages = Array.isArray(state)
    ? state
    : typeof state === 'object' && state !== null && Array.isArray((state as { messages?: unknown }).messages)
      ? (state as { messages: unknown[] }).messages
      : undefined;
  if (messages === undefined || toolCall.id === undefined) return undefined;
  let step = 0;
  for (const message of messages as MessageLike[]) {
    const type = typeof message?.getType === 'function' ? message.getType() : message?.type;
    if (type !== 'ai') continue;
    const sameTool = (message.tool_calls ?? []).filter((c) => c.name === toolCall.name);
    const callIndex = sameTool.findIndex((c) => c.id === toolCall.id);
    if (callIndex >= 0) return { step, callIndex };
    step++;
  }
  return undefined;
}

/**
 * The node path of the subgraph a `ToolNode` runs in, from LangGraph's checkpoint namespace
 * (`agent:<task>|tools:<task>` → `agent`): the task IDs and the tool node itself left out, so it is the
 * same on every re-run. `undefined` at the top level.
 */
function graphPath(namespace: unknown): string | undefined {
  if (typeof namespace !== 'string' || namespace.length === 0) return undefined;
  const nodes = namespace
    .split('|')
    .slice(0, -1)
    .map((segment) => segment.split(':')[0])
    .filter((node): node is string => node !== undefined && node.length > 0);
  return nodes.length > 0 ? nodes.join('/') : undefined;
}

function isApproved(answer: unknown): boolean {
  if (answer === true) return true;
  return (
    typeof answer === 'object' && answer !== null && (answer as { approved?: unknown }).approved === true
  );
}
