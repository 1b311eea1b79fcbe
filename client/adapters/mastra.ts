import type { Tool, ToolExecutionContext } from '@mastra/core/tools';
import {
  assistantMessagesIn,
  type FrameworkToolCall,
  frameworkOperationId,
  isLedgerEnvelope,
  type LedgerRunner,
  type LedgerToolOptions,
  ledgerToolName,
  planTools,
  runLedgerToolCall,
  type ToolPlan,
  type WithLedgerOptions,
} from './framework-common';
import type { ToolResultEnvelope } from './result-envelope';

/**
 * Mastra's tools (`@mastra/core`, `createTool`) mapped onto `ledger.run`: the tools of an agent in,
 * the same tools out, each write tool's `execute` running through the ledger.
 *
 * Where a call sits (what its default operation ID is made of):
 * - the run: `options.runId` (a string, or a function of the tool's execution context, e.g. reading
 *   the request context), else the agent's memory thread (`memory: { thread }`), the conversation a
 *   re-run continues;
 * - the step: the assistant messages in the messages the agent sent the model for the call's response
 *   (`context.agent.messages`);
 * - the position: the call's place among the response's calls to the same tool, in the order the agent
 *   starts them (it starts a response's calls in the response's order), counted per Mastra run. An
 *   approved call resumed by `approveToolCall` keeps its run and its call, so it keeps its place.
 *
 * The adapter imports nothing from Mastra at run time: a wrapped tool is a copy of the tool (same
 * prototype, same schemas, same marker) with its own `execute`.
 */

/** A Mastra tool call as `options.operationId` sees it. */
export interface MastraToolCall extends FrameworkToolCall {
  /** The model's tool-call ID (`frameworkCallId` too), when an agent runs the tool. */
  toolCallId: string | undefined;
  /** The execution context Mastra handed the tool (request context, agent, workflow, thread). */
  context: ToolExecutionContext;
}

/** The tool's own output type, for the options that see it. */
type OutputOf<T> = T extends Tool<infer _I, infer OUTPUT> ? OUTPUT : unknown;

/** `withLedger`'s options for Mastra tools, keyed by the names the agent gives them. */
export interface MastraLedgerOptions<TOOLS, READ extends keyof TOOLS & string = never>
  extends Omit<WithLedgerOptions<MastraToolCall>, 'runId' | 'read'> {
  /**
   * The run the tools act for: a string, or read from each call's execution context (the request
   * context your server fills per conversation). @default the agent's memory thread (`context.agent.threadId`)
   */
  runId?: string | ((context: ToolExecutionContext) => string | undefined);
  /** The tools that only read: returned untouched. */
  read?: readonly READ[];
  /** Ledger options per write tool: `reconcile`, `downstreamIdempotent`, `requiresApproval`, `name`… */
  tools?: { [K in Exclude<keyof TOOLS & string, READ>]?: LedgerToolOptions<OutputOf<TOOLS[K]>> };
}

/** A wrapped Mastra tool: its output is its own on a call that ran the effect, or the envelope the model is told. */
export type LedgerMastraTool<TOOL> =
  TOOL extends Tool<infer IN, infer OUT, infer SUSPEND, infer RESUME, infer CONTEXT, infer ID, infer REQUEST>
    ? Tool<IN, OUT | ToolResultEnvelope, SUSPEND, RESUME, CONTEXT, ID, REQUEST>
    : TOOL;

/** The wrapped tools of an agent: the read tools untouched. */
export type LedgerMastraTools<TOOLS, READ extends keyof TOOLS = never> = {
  [K in keyof TOOLS]: K extends READ ? TOOLS[K] : LedgerMastraTool<TOOLS[K]>;
};

/** What tells one Mastra tool from a record of them, for the overloads (a tool has a string `id`). */
interface MastraToolLike {
  readonly id: string;
  readonly description: string;
  readonly execute?: (...args: never[]) => unknown;
}

/** Mastra marks its tools with this registry symbol (it survives two copies of the package). */
const MASTRA_TOOL = Symbol.for('mastra.core.tool.Tool');

/** How many Mastra runs' call positions one wrapped tool remembers (the oldest are forgotten first). */
const REMEMBERED_RUNS = 10_000;

/**
 * Runs every write tool of a Mastra agent through the ledger: each call becomes one operation, executed
 * at most once; a re-run of the same step of the same conversation replays it, and the model is told
 * it did (`replayed: true`). Give it the agent's `tools` record, or one tool (then the per-tool options
 * are keyed by the tool's `id`).
 *
 * Mastra's approval (`requireApproval: true` on the tool, `approveToolCall`) works as before; with an
 * `approver`, the approval a person gave is recorded in the ledger, bound to the call's ID and digest,
 * and a tool with `requiresApproval` asks through Mastra.
 *
 * @throws TypeError at once for options that name no tool or a tool without a valid ledger name.
 * @example
 * ```ts
 * const agent = new Agent({
 *   id: 'support', name: 'Support', instructions, model,
 *   tools: withLedger(ledger, { sendEmail, searchDocs }, { read: ['searchDocs'] }),
 * });
 * await agent.generate(message, { memory: { thread: chatId, resource: userId } });
 * ```
 */
export function withLedger<TOOL extends MastraToolLike>(
  ledger: LedgerRunner,
  tool: TOOL,
  options: MastraLedgerOptions<Record<TOOL['id'], TOOL>>,
): LedgerMastraTool<TOOL>;
export function withLedger<
  TOOLS extends Record<string, unknown>,
  const READ extends keyof TOOLS & string = never,
>(
  ledger: LedgerRunner,
  tools: TOOLS,
  options: MastraLedgerOptions<TOOLS, READ>,
): LedgerMastraTools<TOOLS, READ>;
export function withLedger(
  ledger: LedgerRunner,
  toolsOrTool: Record<string, unknown>,
  options: MastraLedgerOptions<Record<string, unknown>, string>,
): unknown {
  if (typeof toolsOrTool !== 'object' || toolsOrTool === null) {
    throw new TypeError('withLedger needs a Mastra tool or a record of tools');
  }
  const single = isMastraTool(toolsOrTool);
  const tools: Record<string, unknown> = single ? { [toolsOrTool.id]: toolsOrTool } : toolsOrTool;
  const names = Object.keys(tools);
  const executable = names.filter((name) => {
    const tool = tools[name];
    return isMastraTool(tool) && typeof tool.execute === 'function';
  });
  if (
    options?.runId !== undefined &&
    typeof options.runId !== 'string' &&
    typeof options.runId !== 'function'
  ) {
    throw new TypeError('options.runId, when given, must be a string or a function of the execution context');
  }
  const plans = planTools(executable, names, withDefaultNames(tools, executable, options), 'framework');
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const plan = plans.get(name);
    const tool = tools[name];
    out[name] =
      plan?.effect === 'write' && isMastraTool(tool) ? wrapTool(ledger, name, tool, plan, options) : tool;
  }
  return single ? out[toolsOrTool.id] : out;
}

/**
 * The options as the shared checks read them: the run identity is this adapter's to find (the option
 * may be a function), and a write tool's default ledger name comes from its `id`, which names it
 * wherever it is registered (the key is one agent's name for it).
 */
function withDefaultNames(
  tools: Record<string, unknown>,
  executable: readonly string[],
  options: MastraLedgerOptions<Record<string, unknown>, string>,
): WithLedgerOptions<MastraToolCall> & { tools?: Record<string, LedgerToolOptions | undefined> } {
  const { runId: _found, tools: perTool = {}, ...rest } = options ?? {};
  const read: readonly string[] = Array.isArray(options?.read) ? options.read : [];
  const named: Record<string, LedgerToolOptions | undefined> = { ...perTool };
  for (const name of executable) {
    const own = named[name];
    if (read.includes(name) || own?.name !== undefined) continue;
    named[name] = { ...own, name: ledgerToolName((tools[name] as Tool).id) };
  }
  return { ...rest, tools: named };
}

function isMastraTool(value: unknown): value is Tool {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MASTRA_TOOL] === true
  );
}

function wrapTool(
  ledger: LedgerRunner,
  name: string,
  tool: Tool,
  plan: Extract<ToolPlan, { effect: 'write' }>,
  options: MastraLedgerOptions<Record<string, unknown>, string>,
): Tool {
  const own = tool.execute as NonNullable<Tool['execute']>;
  const positions = new CallPositions();
  // A tool the ledger holds for approval asks through Mastra's own flow when the answer can be recorded.
  const asks = plan.options.requiresApproval === true && options.approver !== undefined;
  const requireApproval = tool.requireApproval === true || (asks && !tool.requireApproval);
  const wrapped: Tool = Object.assign(Object.create(Object.getPrototypeOf(tool)) as Tool, tool, {
    requireApproval: requireApproval ? true : tool.requireApproval,
    execute: async (input: unknown, context: ToolExecutionContext) => {
      // Bad input runs nothing and records nothing: the tool's own execute answers with Mastra's error.
      const checked = await validated(tool, input);
      if (!checked.valid) return own(input, context);
      const agent = context?.agent;
      const toolCallId = agent?.toolCallId;
      const step = agent ? assistantMessagesIn(agent.messages) : 0;
      const call: MastraToolCall = {
        toolName: name,
        ledgerTool: plan.ledgerTool,
        input: checked.value,
        runId: runIdOf(options.runId, context),
        step,
        callIndex:
          toolCallId === undefined ? 0 : positions.place(`${mastraRunOf(context)}\u0000${step}`, toolCallId),
        toolCallId,
        context,
      };
      if (toolCallId !== undefined) call.frameworkCallId = toolCallId;
      if (agent === undefined && options.operationId === undefined) {
        throw new TypeError(
          `${name} ran outside an agent, where its call has no step: pass options.operationId to name it`,
        );
      }
      const result = await runLedgerToolCall(ledger, options.approver, {
        operationId: frameworkOperationId(call, options),
        ledgerTool: plan.ledgerTool,
        input: checked.value,
        runId: call.runId,
        options: plan.options,
        signal: context?.abortSignal,
        // Mastra runs a tool marked `requireApproval: true` only after `approveToolCall`.
        approvedInFramework: agent !== undefined && requireApproval,
        execute: (ctx) => own(checked.value, { ...context, abortSignal: ctx.signal }),
      });
      return result.kind === 'executed' ? result.value : result.model.envelope;
    },
  });
  // The tool's own output transform never sees an envelope: the model reads the envelope as it is.
  const toModelOutput = tool.toModelOutput;
  if (toModelOutput !== undefined) {
    wrapped.toModelOutput = (output: unknown) => (isLedgerEnvelope(output) ? output : toModelOutput(output));
  }
  return wrapped;
}

/** The run identity of a call: the option (a string or read from the context), else the memory thread. */
function runIdOf(
  option: MastraLedgerOptions<Record<string, unknown>>['runId'],
  context: ToolExecutionContext,
): string | undefined {
  if (typeof option === 'string') return option;
  if (typeof option === 'function') return option(context);
  return context?.agent?.threadId;
}

/**
 * Mastra's own ID of the agent run executing the call (fresh per `generate` / `stream` unless the caller
 * names one; kept by `approveToolCall`). It groups a response's calls; it is never part of an operation
 * ID, since a re-run after a crash is a new Mastra run.
 */
function mastraRunOf(context: ToolExecutionContext): string {
  return 'runId' in context && typeof context.runId === 'string' ? context.runId : '';
}

/** The input after the tool's own schema (Standard Schema), as the ledger's digest should see it. */
async function validated(
  tool: Tool,
  input: unknown,
): Promise<{ valid: true; value: unknown } | { valid: false }> {
  const schema = tool.inputSchema;
  if (schema === undefined) return { valid: true, value: input ?? {} };
  const result = await schema['~standard'].validate(input);
  return result.issues === undefined ? { valid: true, value: result.value } : { valid: false };
}

/**
 * The positions of one tool's calls, per Mastra run and step: the order the agent starts them in. A
 * call seen again (an approved call resumed) keeps its place.
 */
class CallPositions {
  private readonly groups = new Map<string, string[]>();

  place(group: string, toolCallId: string): number {
    let calls = this.groups.get(group);
    if (calls === undefined) {
      calls = [];
      this.groups.set(group, calls);
      if (this.groups.size > REMEMBERED_RUNS) {
        const oldest = this.groups.keys().next().value;
        if (oldest !== undefined) this.groups.delete(oldest);
      }
    }
    const known = calls.indexOf(toolCallId);
    if (known >= 0) return known;
    calls.push(toolCallId);
    return calls.length - 1;
  }
}
