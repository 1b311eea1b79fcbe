import { AsyncLocalStorage } from 'node:async_hooks';
import type { Operation } from '../api-types';
import type { ReconcileVerdict, RunContext, RunInput, RunOutcome, RunWaitOptions } from '../caller-run';
import { ToolLedgerRequestError } from '../errors';
import { operationIdFrom } from '../operation-id';
import type { ToolLedgerClient } from '../tool-ledger-client';
import {
  envelopeForOperation,
  type ModelToolResult,
  modelResultForError,
  type ToolResultEnvelope,
  toModelToolResult,
} from './result-envelope';

/**
 * What every framework adapter (`withLedger` of `@tool-ledger/client/ai-sdk`, `/mastra`,
 * `/openai-agents`, `/langchain`, `/durable`) shares, so that each adapter file only maps its
 * framework's tool shape: the tool options a user gives per tool name, the ledger tool name a framework
 * name becomes, the default operation ID, one tool call run through `ledger.run` (with the framework's
 * own approval recorded in the ledger), and what the tool returns when the ledger, not the tool,
 * answers. `ledger.run` owns the protocol; nothing here retries, keeps state, or repeats its rules.
 */

/** The client method a `withLedger` adapter runs tool calls through. */
export type LedgerRunner = Pick<ToolLedgerClient, 'run'>;

/**
 * Records, in the ledger, an approval a person gave in the framework's own approval flow: a client
 * with the approver role of the same tenant, under another principal than the agent (the ledger
 * refuses a self-approval). `reject` records a person's rejection too, where a framework hands the
 * rejection to the tool (a LangGraph interrupt answered no).
 */
export type LedgerApprover = Pick<ToolLedgerClient, 'approve'> & Partial<Pick<ToolLedgerClient, 'reject'>>;

/**
 * The ledger options of one tool, given per framework tool name. `TOutput` is the tool's own output
 * type where the framework declares one.
 */
export interface LedgerToolOptions<TOutput = unknown> {
  /**
   * The ledger tool name (`[a-z][a-z0-9_.-]{0,63}`), part of the digest. Keep it stable: a renamed tool
   * is a new operation. @default the framework name in snake case (`sendEmail` → `send_email`)
   */
  name?: string;
  /**
   * Asks the target whether an attempt whose outcome the ledger does not know happened (look it up by
   * `ctx.downstreamKey`): `applied` with the result, `not_applied`, or `unknown`.
   */
  reconcile?(ctx: RunContext): Promise<ReconcileVerdict<TOutput>> | ReconcileVerdict<TOutput>;
  /** The target dedupes on `ctx.downstreamKey`: an unknown outcome may be tried again. @default false */
  downstreamIdempotent?: boolean;
  /** Makes the result safe to store and show the model on a replay. */
  sanitizeResult?(result: TOutput): unknown;
  /** How long a claim holds without a heartbeat, seconds (1 to 900). @default 60 */
  leaseSeconds?: number;
  /**
   * The ledger holds each call for a person's approval, bound to its operation ID and arguments digest.
   * With an `approver`, the framework's own approval flow asks that person and the approver records the
   * answer; without one, the ledger's approvers decide (console, CLI) and the model is told the call
   * waits. @default false
   */
  requiresApproval?: boolean;
  /** Attempts in all (1 to 10); the deployment may cap it. */
  maxAttempts?: number;
  /**
   * On a call that waits (for approval, an operator, another claimant), poll until it moves instead of
   * telling the model at once. It holds the agent's step meanwhile. @default false
   */
  wait?: boolean | RunWaitOptions;
}

/**
 * One framework tool call as the default operation ID sees it. Every field comes from state the
 * framework keeps across a re-run of the same step; the framework's own call ID is carried for
 * matching and logs, never for identity.
 */
export interface FrameworkToolCall {
  /** The framework's name for the tool (a ToolSet key, a Mastra tool ID, a function tool's name). */
  toolName: string;
  /** The ledger tool name the call is recorded under. */
  ledgerTool: string;
  /** The arguments, as the framework validated them. */
  input: unknown;
  /** The run the call belongs to: the `runId` option, or the run identity the framework keeps. */
  runId: string | undefined;
  /** The step that produced the call: for model-driven loops, the assistant messages before it. */
  step: number | string;
  /**
   * The call's position among the step's calls to this same tool, from 0. Where a framework hands a tool
   * no position for a call it runs in a resumed run (the OpenAI Agents SDK, after a person approved the
   * call), the framework's own call ID for it, as the framework keeps it in the run state it resumes.
   */
  callIndex: number | string;
  /** The framework's (or model provider's) ID for this call: minted per generation, so never the ID. */
  frameworkCallId?: string;
}

/** Options every `withLedger` takes; adapters add their framework's own. */
export interface WithLedgerOptions<TCall extends FrameworkToolCall = FrameworkToolCall> {
  /**
   * The tools that only read: returned untouched (no operation, no record). Every other tool with an
   * `execute` is a write tool and runs through the ledger.
   */
  read?: readonly string[];
  /**
   * The run the tools act for: a conversation, a thread, a job, kept by your application across
   * restarts. Part of every default operation ID, so it must be the same when a step is re-run.
   */
  runId?: string;
  /** A namespace in front of every default ID, for more than one tool loop per run (a sub-agent). */
  scope?: string;
  /**
   * Your own operation ID for a call, instead of the default `<runId>/<step>/<tool>/<callIndex>`. It must
   * come from state that survives a retry, a restart and a replay.
   */
  operationId?(call: TCall): string;
  /**
   * Records the approvals people give in the framework's own approval flow in the ledger, bound to the
   * call's operation ID and digest. Without it, a framework approval is the framework's alone.
   */
  approver?: LedgerApprover;
}

/** The ledger's tool-name rule (the tool-ledger contract, §4). */
const LEDGER_TOOL_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

/**
 * The ledger tool name a framework's tool name becomes by default: camel case to snake case, lower
 * case, every other character outside `[a-z0-9_.-]` to `_`. Throws when the result still breaks the
 * ledger's rule (say so with the tool's `name` option).
 *
 * @example
 * ```ts
 * ledgerToolName('sendEmail');   // 'send_email'
 * ledgerToolName('delete-file'); // 'delete-file'
 * ```
 */
export function ledgerToolName(frameworkName: string): string {
  const name = frameworkName
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '_');
  if (!LEDGER_TOOL_NAME.test(name)) {
    throw new TypeError(
      `tool ${JSON.stringify(frameworkName)} has no valid default ledger name (${JSON.stringify(name)} is not ` +
        '[a-z][a-z0-9_.-]{0,63}); give it one with the tool\'s "name" option',
    );
  }
  return name;
}

/** What `withLedger` does with one framework tool. */
export type ToolPlan<TOutput = unknown> =
  | { effect: 'read' }
  | { effect: 'write'; ledgerTool: string; options: LedgerToolOptions<TOutput> };

/**
 * Checks the options of a `withLedger` call against the tools it wraps, before any call is made, and
 * says what happens to each tool: a name in `read` or the per-tool options that is no tool, options for
 * a read tool, a ledger name that breaks the rule or that two tools share, or write tools with nothing
 * to identify their run are refused with a `TypeError` naming the option.
 *
 * @param executable the framework names of the tools that have an `execute` (tools without one run
 * elsewhere and are never wrapped)
 * @param runIdentity `'framework'` when the adapter finds each call's run itself (a graph's thread, a
 * function of the run's context) and checks it there, so `options.runId` is not required here.
 */
export function planTools(
  executable: readonly string[],
  known: readonly string[],
  options: WithLedgerOptions & { tools?: Readonly<Record<string, LedgerToolOptions | undefined>> },
  runIdentity: 'option' | 'framework' = 'option',
): Map<string, ToolPlan> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('withLedger needs options: at least { runId } or { operationId }');
  }
  const perTool = options.tools ?? {};
  const read = options.read ?? [];
  if (!Array.isArray(read)) throw new TypeError('options.read, when given, must be a list of tool names');
  for (const name of read) {
    if (!known.includes(name))
      throw new TypeError(`options.read names ${JSON.stringify(name)}, no tool in the set`);
  }
  for (const name of Object.keys(perTool)) {
    if (!known.includes(name)) throw new TypeError(`options.tools.${name} names no tool in the set`);
    if (read.includes(name)) {
      throw new TypeError(
        `options.tools.${name}: ${name} is a read tool, which never runs through the ledger`,
      );
    }
  }
  const plans = new Map<string, ToolPlan>();
  const owners = new Map<string, string>();
  for (const toolName of executable) {
    if (read.includes(toolName)) {
      plans.set(toolName, { effect: 'read' });
      continue;
    }
    const own = perTool[toolName] ?? {};
    const ledgerTool = own.name ?? ledgerToolName(toolName);
    if (!LEDGER_TOOL_NAME.test(ledgerTool)) {
      throw new TypeError(`options.tools.${toolName}.name must be [a-z][a-z0-9_.-]{0,63}`);
    }
    const taken = owners.get(ledgerTool);
    if (taken !== undefined) {
      throw new TypeError(
        `tools ${taken} and ${toolName} would both be recorded as ${ledgerTool}; give one a "name"`,
      );
    }
    owners.set(ledgerTool, toolName);
    plans.set(toolName, { effect: 'write', ledgerTool, options: own });
  }
  const writes = [...plans.values()].some((plan) => plan.effect === 'write');
  if (writes && runIdentity === 'option' && options.operationId === undefined) {
    if (typeof options.runId !== 'string' || options.runId.length === 0) {
      throw new TypeError(
        'withLedger needs options.runId (the conversation or job the tools act for, the same when a step ' +
          'is re-run) or options.operationId',
      );
    }
  }
  if (options.operationId !== undefined && typeof options.operationId !== 'function') {
    throw new TypeError('options.operationId, when given, must be a function');
  }
  if (options.scope !== undefined && (typeof options.scope !== 'string' || options.scope.length === 0)) {
    throw new TypeError('options.scope, when given, must be a non-empty string');
  }
  return plans;
}

/**
 * The operation ID of a framework tool call: yours (`options.operationId`) or the default
 * `operationIdFrom([scope?, runId, step, ledgerTool, callIndex])`, e.g. `chat-42/3/send_email/0`.
 *
 * Why these parts: a re-run of the same step after a crash or a retry sees the same run, the same
 * conversation before the step and the same calls, so it derives the same IDs and the ledger replays
 * instead of running the effect again. The model's tool-call ID is minted per generation and would
 * change. The position counts calls to the same tool only, so it does not move when a regenerated
 * response adds a call to another tool, and tools wrapped by separate `withLedger` calls never share an
 * ID.
 */
export function frameworkOperationId<TCall extends FrameworkToolCall>(
  call: TCall,
  options: Pick<WithLedgerOptions<TCall>, 'operationId' | 'scope'>,
): string {
  if (options.operationId) return options.operationId(call);
  if (call.runId === undefined || call.runId.length === 0) {
    throw new TypeError(`no run identity for a call to ${call.toolName}: pass options.runId or operationId`);
  }
  const parts = [call.runId, call.step, call.ledgerTool, call.callIndex];
  return operationIdFrom(options.scope === undefined ? parts : [options.scope, ...parts]);
}

/** One tool call to run through the ledger. */
export interface LedgerToolCall<T> {
  operationId: string;
  ledgerTool: string;
  /** The arguments as the framework validated them; JSON, or the call is refused. */
  input: unknown;
  /** Recorded with the operation for logs and the listing. */
  runId: string | undefined;
  options: LedgerToolOptions<T>;
  /** Runs the framework tool's own `execute` for one claim (its signal is `ctx.signal`). */
  execute(ctx: RunContext): Promise<T> | T;
  /** The framework's abort signal: cancels waiting, aborts the effect. */
  signal?: AbortSignal | undefined;
  /** True when a person approved this very call in the framework's own approval flow. */
  approvedInFramework?: boolean;
  /**
   * True when a person rejected this very call in the framework's own approval flow and the framework
   * still asks the tool for an output: the rejection is recorded (the approver's `reject`) and the model
   * is told the call was rejected. Nothing runs.
   */
  rejectedInFramework?: boolean;
}

/**
 * What a framework tool call came to: the tool's own value, when this call ran the effect and it
 * succeeded; otherwise what the model is told (`RunOutcome.model`: a replay, a conflict, a wait for
 * approval, an unknown outcome, a failure), the same envelope the model adapters give.
 */
export type LedgerToolResult<T> =
  | { kind: 'executed'; value: T; outcome: RunOutcome }
  | { kind: 'told'; model: ModelToolResult; outcome: RunOutcome | undefined };

/**
 * Runs one framework tool call through `ledger.run` and says what the framework should return.
 *
 * The framework's own approval, when an `approver` is given, becomes the ledger's: the call is reserved
 * holding for approval, the approver approves it bound to the operation ID and the digest the ledger
 * computed from the very arguments the person approved, and `run` then claims and executes it.
 *
 * ```
 * approved in the framework ── run ──▶ awaiting_approval ── approver.approve(id, digest) ── run ──▶ claim, execute
 * rejected in the framework ── run ──▶ awaiting_approval ── approver.reject(id, digest) ──▶ rejected (told)
 *                                  └──▶ any other state (a replay after a crash, a conflict): as it stands
 * ```
 *
 * Errors the ledger reports about the call (a conflict, a refusal, no answer in time) become what the
 * model is told; errors of the setup (credentials, a refused approver) are thrown.
 */
export async function runLedgerToolCall<T>(
  ledger: LedgerRunner,
  approver: LedgerApprover | undefined,
  call: LedgerToolCall<T>,
): Promise<LedgerToolResult<T>> {
  const { options } = call;
  const decision =
    call.approvedInFramework === true ? 'approve' : call.rejectedInFramework === true ? 'reject' : undefined;
  const recordDecision = decision !== undefined && approver !== undefined;
  let produced: { value: T; attempt: number } | undefined;
  const input: RunInput<T> = {
    operationId: call.operationId,
    tool: call.ledgerTool,
    arguments: call.input,
    execute: async (ctx) => {
      const value = await runContexts.run(ctx, () => call.execute(ctx));
      produced = { value, attempt: ctx.attempt };
      return value;
    },
  };
  if (call.runId !== undefined) input.agentRunId = call.runId;
  if (call.signal !== undefined) input.signal = call.signal;
  if (options.reconcile !== undefined) input.reconcile = options.reconcile.bind(options);
  if (options.sanitizeResult !== undefined) input.sanitizeResult = options.sanitizeResult.bind(options);
  if (options.downstreamIdempotent !== undefined) input.downstreamIdempotent = options.downstreamIdempotent;
  if (options.leaseSeconds !== undefined) input.leaseSeconds = options.leaseSeconds;
  if (options.maxAttempts !== undefined) input.maxAttempts = options.maxAttempts;
  if (options.wait !== undefined) input.wait = options.wait;
  if (options.requiresApproval === true || recordDecision) input.requiresApproval = true;

  let outcome: RunOutcome;
  try {
    if (recordDecision) {
      outcome = await ledger.run({ ...input, wait: false });
      if (outcome.operation.state === 'awaiting_approval') {
        const digest = outcome.operation.arguments_digest;
        if (decision === 'reject') {
          const rejected = await reject(approver, call.operationId, digest);
          if (rejected !== undefined) {
            return { kind: 'told', model: toModelToolResult(envelopeForOperation(rejected, false)), outcome };
          }
        } else {
          await approve(approver, call.operationId, digest);
        }
        outcome = await ledger.run(decision === 'reject' ? { ...input, wait: false } : input);
      }
    } else {
      outcome = await ledger.run(input);
    }
  } catch (error) {
    const told = modelResultForError(call.operationId, error);
    if (told === undefined) throw error;
    return { kind: 'told', model: told, outcome: undefined };
  }
  if (
    outcome.outcome === 'succeeded' &&
    !outcome.replayed &&
    produced !== undefined &&
    produced.attempt === outcome.operation.attempt
  ) {
    return { kind: 'executed', value: produced.value, outcome };
  }
  return { kind: 'told', model: outcome.model, outcome };
}

/**
 * Approves, bound to the digest the ledger holds for this ID. A 409 means someone decided first (an
 * approver rejected it, the deadline passed): the next `run` reports what stands. Anything else (the
 * approver is the agent itself, or lacks the role) is a setup error and is thrown.
 */
async function approve(approver: LedgerApprover, operationId: string, digest: string): Promise<void> {
  try {
    await approver.approve(operationId, digest);
  } catch (error) {
    if (error instanceof ToolLedgerRequestError && error.status === 409) return;
    throw error;
  }
}

/**
 * Rejects, bound to the digest the ledger holds for this ID, and returns the rejected record; `undefined`
 * when someone decided first (409: the next `run` reports what stands).
 */
async function reject(
  approver: LedgerApprover,
  operationId: string,
  digest: string,
): Promise<Operation | undefined> {
  if (approver.reject === undefined) {
    throw new TypeError('the approver cannot record a rejection: give withLedger a client with reject()');
  }
  try {
    return await approver.reject(operationId, digest);
  } catch (error) {
    if (error instanceof ToolLedgerRequestError && error.status === 409) return undefined;
    throw error;
  }
}

/** The claim a framework tool's `execute` runs under, while it runs. */
const runContexts = new AsyncLocalStorage<RunContext>();

/**
 * Inside a wrapped tool's `execute`: the ledger's context of the claim it runs under (the downstream
 * key to pass to a target with its own idempotency, the attempt, the operation ID, the signal that
 * aborts when the claim is lost). `undefined` anywhere else, including read tools. Framework tool
 * signatures have no room for it, so it travels with the call's async context.
 *
 * @example
 * ```ts
 * execute: async ({ amount }) => {
 *   const { downstreamKey } = currentRunContext()!;
 *   return stripe.refunds.create({ charge, amount }, { idempotencyKey: downstreamKey });
 * }
 * ```
 */
export function currentRunContext(): RunContext | undefined {
  return runContexts.getStore();
}

/**
 * True for a value a wrapped tool returned in place of its own output: the envelope the model is told
 * (`operation_id`, `state`, `replayed`). Use it to tell the two apart in code that reads tool outputs,
 * and to keep a tool's own output transform away from envelopes.
 *
 * @example
 * ```ts
 * const output = result.toolResults[0]?.output;
 * if (isLedgerEnvelope(output)) console.log(output.state, output.replayed);
 * ```
 */
export function isLedgerEnvelope(value: unknown): value is ToolResultEnvelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.operation_id === 'string' && typeof v.state === 'string' && typeof v.replayed === 'boolean';
}

/**
 * The model-message positions of a call, for frameworks whose tools see the conversation: the step is
 * the number of assistant messages before the call's response.
 */
export function assistantMessagesIn(messages: readonly { role: string }[]): number {
  let count = 0;
  for (const message of messages) if (message.role === 'assistant') count++;
  return count;
}
