import type { RunContext, ToolInputParameters, ToolOptions, UnknownContext } from '@openai/agents';
import {
  type FrameworkToolCall,
  frameworkOperationId,
  type LedgerRunner,
  type LedgerToolOptions,
  planTools,
  runLedgerToolCall,
  type WithLedgerOptions,
} from './framework-common';

/**
 * The OpenAI Agents SDK's function tools (`@openai/agents`) mapped onto `ledger.run`: the options you
 * give the SDK's `tool()` in, the same options out, so `tool(withLedger(ledger, {...}, options))` is the
 * whole change. A function tool the SDK has already built hides its `execute` and turns its throws into
 * text for the model, so the ledger could not tell a failure from a result: the options are where the
 * tool's own `execute` is still in reach.
 *
 * Where a call sits (what its default operation ID is made of):
 * - the run: `options.runId`, a string or a function of the SDK's run context (the identity of this
 *   agent run, kept by your application: the same when the run is re-run or resumed);
 * - the step: the model responses of the run so far (`runContext.usage.requests`), which the SDK counts
 *   in the run state and restores with it;
 * - the position: the call's place among the response's calls to the same tool. Before it runs any tool
 *   of a response, the SDK asks each call's approval policy in the response's order; the adapter notes
 *   the order there, per run context, step and tool.
 * - a call a person approved (`state.approve`) runs in a resumed run, where the SDK hands the tool no
 *   position, only its call ID: such a call is named by that ID (`call-<callId>`), which the SDK keeps
 *   in the run state you resume and binds its approval to.
 */

/** A function tool call as `options.operationId` sees it. */
export interface OpenAIAgentsToolCall extends FrameworkToolCall {
  /** The SDK's call ID for this call (`frameworkCallId` too). */
  callId: string;
  /** The run context the SDK handed the tool. */
  runContext: RunContext<unknown>;
}

/**
 * `withLedger`'s options for one function tool: the run identity and the tool's ledger options
 * (`reconcile`, `downstreamIdempotent`, `requiresApproval`…) side by side; `read: [name]` declares it a
 * read tool, returned untouched.
 */
export interface OpenAIAgentsLedgerOptions<Context = UnknownContext>
  extends Omit<WithLedgerOptions<OpenAIAgentsToolCall>, 'runId'>,
    LedgerToolOptions {
  /**
   * The agent run the tool acts for, the same when the run is re-run after a crash or resumed from a
   * saved `RunState`: a string, or read from the run's context (`(ctx) => ctx.context.turnId`). Every
   * `run()` that is a new request of the conversation needs a new one, since the SDK counts steps per run.
   */
  runId?: string | ((runContext: RunContext<Context>) => string);
}

/**
 * The calls the SDK asked the approval policy about, per run context: the step they came from and, per
 * tool, their call IDs in the order of the model's response.
 */
const sighted = new WeakMap<object, { step: number; byTool: Map<string, string[]> }>();

/**
 * Runs a function tool's `execute` through the ledger: each call becomes one operation, executed at
 * most once; a re-run of the same step (after a crash or a retry, from the same conversation or the same
 * saved `RunState`) replays it, and the model is told it did (`replayed: true`). A tool named in
 * `options.read` is returned untouched.
 *
 * The SDK's approval (`needsApproval`, interruptions, `state.approve`) works as before; with an
 * `approver`, a person's approval is recorded in the ledger, bound to the call's ID and digest, and
 * `requiresApproval` asks through the SDK's flow. The tool's policy is called as a function from then on,
 * so its normalized input must be plain data (as the ledger's arguments must be JSON).
 *
 * @throws TypeError at once for a tool without a name, a tool with an `outputSchema` (the model must be
 * told replays and conflicts in text), or no `runId` / `operationId`.
 * @example
 * ```ts
 * const refund = tool(
 *   withLedger(ledger, {
 *     name: 'refund',
 *     description: 'Refund an invoice',
 *     parameters: z.object({ invoice: z.string(), cents: z.number().int() }),
 *     execute: async ({ invoice, cents }) => payments.refund(invoice, cents),
 *   }, { runId: (ctx) => ctx.context.turnId }),
 * );
 * ```
 */
export function withLedger<TParameters extends ToolInputParameters = undefined, Context = UnknownContext>(
  ledger: LedgerRunner,
  tool: ToolOptions<TParameters, Context>,
  options: OpenAIAgentsLedgerOptions<Context>,
): ToolOptions<TParameters, Context> {
  if (typeof tool !== 'object' || tool === null || typeof tool.execute !== 'function') {
    throw new TypeError('withLedger needs the options of a function tool (what you give tool())');
  }
  const name = tool.name;
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError('withLedger needs the tool to have a name (its ledger name and approvals use it)');
  }
  const { runId, ...shared } = options;
  const read = Array.isArray(options.read) && options.read.includes(name);
  const perTool = read ? {} : { [name]: options };
  const plan = planTools([name], [name], { ...shared, tools: perTool }, 'framework').get(name);
  if (plan?.effect !== 'write') return tool;
  if (tool.outputSchema !== undefined) {
    throw new TypeError(
      `tool ${name} has an outputSchema: a write tool's output must be able to carry the ledger's text ` +
        '(a replay, a conflict, a wait for approval)',
    );
  }
  if (options.operationId === undefined && !isRunId(runId)) {
    throw new TypeError(
      'withLedger needs options.runId (the agent run, a string or a function of the run context, the same ' +
        'when the run is re-run or resumed) or options.operationId',
    );
  }

  const loose = tool as unknown as LooseToolOptions;
  const ownExecute = loose.execute;
  const ownPolicy = loose.needsApproval;
  // A tool the ledger holds for approval asks through the SDK's own flow when its answer can be recorded.
  const asks = plan.options.requiresApproval === true && options.approver !== undefined;
  const wrapped: LooseToolOptions = {
    ...loose,
    needsApproval: async (runContext, input, callId) => {
      // The SDK asks every call of a response here, in the response's order, before it runs any; a call
      // it already has a decision for (a resumed approval) is not a new sighting.
      if (callId !== undefined && runContext.isToolApproved({ toolName: name, callId }) === undefined) {
        sight(runContext, name, callId);
      }
      if (asks) return true;
      return typeof ownPolicy === 'function' ? ownPolicy(runContext, input, callId) : ownPolicy === true;
    },
    execute: async (input, runContext, details) => {
      const callId = details?.toolCall?.callId;
      if (runContext === undefined || typeof callId !== 'string') {
        throw new TypeError(
          `tool ${name} ran outside the SDK's runner (no run context or call), so its call has no stable ` +
            'place: run it through run() or pass options.operationId',
        );
      }
      const approved = runContext.isToolApproved({ toolName: name, callId }) === true;
      const step = runContext.usage.requests;
      const position = approved ? `call-${callId}` : positionOf(runContext, name, callId, step);
      if (position === undefined && options.operationId === undefined) {
        throw new TypeError(
          `the call ${callId} to ${name} was not seen in its step before it ran, so it has no stable ` +
            'place: run the tool through the SDK (run(), a Runner) or pass options.operationId',
        );
      }
      const call: OpenAIAgentsToolCall = {
        toolName: name,
        ledgerTool: plan.ledgerTool,
        input,
        runId: typeof runId === 'function' ? runId(runContext as RunContext<Context>) : runId,
        step,
        // -1 only reaches your own operationId, for a call the SDK did not show the adapter first.
        callIndex: position ?? -1,
        frameworkCallId: callId,
        callId,
        runContext,
      };
      const result = await runLedgerToolCall(ledger, options.approver, {
        operationId: frameworkOperationId(call, { operationId: options.operationId, scope: options.scope }),
        ledgerTool: plan.ledgerTool,
        input,
        runId: call.runId,
        options: plan.options,
        signal: details?.signal,
        approvedInFramework: approved,
        execute: (ctx) => ownExecute(input, runContext, { ...details, signal: ctx.signal }),
      });
      return result.kind === 'executed' ? result.value : result.model.content;
    },
  };
  return wrapped as unknown as ToolOptions<TParameters, Context>;
}

/** The members of a function tool's options the adapter replaces, with the SDK's own argument types. */
type Execute = ToolOptions<undefined>['execute'];
type Details = Parameters<Execute>[2];
interface LooseToolOptions {
  execute(input: unknown, runContext?: RunContext<unknown>, details?: Details): unknown;
  needsApproval?: boolean | ((runContext: RunContext, input: unknown, callId?: string) => Promise<boolean>);
  [member: string]: unknown;
}

function isRunId(runId: unknown): boolean {
  return typeof runId === 'function' || (typeof runId === 'string' && runId.length > 0);
}

function sight(runContext: RunContext<unknown>, tool: string, callId: string): void {
  const step = runContext.usage.requests;
  let seen = sighted.get(runContext);
  if (seen === undefined || seen.step !== step) {
    seen = { step, byTool: new Map() };
    sighted.set(runContext, seen);
  }
  const calls = seen.byTool.get(tool) ?? [];
  if (!calls.includes(callId)) calls.push(callId);
  seen.byTool.set(tool, calls);
}

/** The call's position among the step's calls to this tool, as the SDK asked about them. */
function positionOf(
  runContext: RunContext<unknown>,
  tool: string,
  callId: string,
  step: number,
): number | undefined {
  const seen = sighted.get(runContext);
  const index = seen?.step === step ? (seen.byTool.get(tool)?.indexOf(callId) ?? -1) : -1;
  return index < 0 ? undefined : index;
}
