import {
  createRetryStrategy,
  type DurableContext,
  type DurableLogger,
  type DurablePromise,
  JitterStrategy,
  type RetryDecision,
  type StepConfig,
  type StepFunc,
} from '@aws/durable-execution-sdk-js';
import type { Operation } from '../api-types';
import type { RunContext, RunInput, RunOutcome } from '../caller-run';
import {
  IdempotencyConflictError,
  InvalidOperationIdError,
  ToolLedgerError,
  ToolLedgerRequestError,
} from '../errors';
import { operationIdFrom } from '../operation-id';
import type { LedgerRunner, LedgerToolOptions } from './framework-common';
import type { ModelToolResult } from './result-envelope';

/**
 * `@tool-ledger/client/durable`: steps of an AWS Lambda durable function (`@aws/durable-execution-sdk-js`)
 * whose effect runs at most once under the ledger.
 *
 * The SDK checkpoints a step after it returns. When the invocation dies between the effect and that
 * checkpoint, the next invocation runs the step again (the default at-least-once mode), or raises
 * `StepInterruptedError` and leaves recovery to you (at-most-once mode). A ledger step runs its effect
 * through `ledger.run` under an operation ID made of the execution's ARN and the step's name, both the
 * same in every invocation of the execution, so the re-run finds the operation the first run recorded:
 *
 * ```
 * invocation 1: step ── ledger.run ── claim ── effect ── outcome ──✕ (dies before the SDK's checkpoint)
 * invocation 2: step ── ledger.run ── 201 stored outcome ───────────────────▶ the step's result (no effect)
 *               or   ── 202 uncertain (died before the outcome) ── reconcile ──▶ applied: the result
 * invocation n: step already checkpointed ──▶ the SDK returns it (the ledger is not asked)
 * ```
 *
 * What a step resolves to is the stored result (what `execute` returned, as JSON, after
 * `sanitizeResult`): the same value on the first run, a ledger replay and an SDK replay. An outcome that
 * is not settled yet (waiting for approval, for an operator, for a claim held elsewhere to end, for the
 * reconciler to decide an unknown outcome) is thrown as a {@link LedgerStepError} that the SDK retries
 * later, the execution suspended meanwhile; a terminal failure, a rejection, changed arguments under the
 * same step and other refusals fail the step at once. `ledger.run` owns the protocol; this file maps a
 * durable step onto it.
 */

/**
 * The ledger options of one tool (the options every framework adapter takes per tool), given per tool
 * name in {@link DurableLedgerOptions.tools} or on the step itself (the step's win). The step names its
 * ledger tool itself, so there is no `name`. `wait` polls inside the invocation while the operation waits
 * (for approval, an operator, another claim) instead of throwing for the SDK to retry later; it keeps
 * the Lambda running meanwhile.
 */
export type LedgerStepToolOptions<T = unknown> = Omit<LedgerToolOptions<T>, 'name'>;

/** One ledger step: the tool it is recorded as and its arguments, with options for this step. */
export interface LedgerStepCall<T = unknown> extends LedgerStepToolOptions<T> {
  /** The ledger tool name (`[a-z][a-z0-9_.-]{0,63}`), part of the digest. */
  tool: string;
  /**
   * The arguments, after your own validation (the ledger has no schema for a tool it does not run):
   * JSON. The same step with other arguments is refused (`IdempotencyConflictError`), never run.
   */
  arguments: unknown;
}

/** What a ledger step's `execute` receives: the claim it runs under, and the SDK's step logger. */
export interface LedgerStepContext<TLogger extends DurableLogger = DurableLogger> extends RunContext {
  /** The SDK's logger for this step (replay-aware). */
  logger: Parameters<StepFunc<unknown, TLogger>>[0]['logger'];
}

/** Where a step sits in its execution: what the default operation ID is made of. */
export interface DurableStepPosition {
  /** The durable execution's ARN: the same in every invocation of one execution. */
  executionArn: string;
  /** The step's name: unique within the execution (within a scope). */
  name: string;
  /** The `scope` given to `withLedger`, for steps in `map` items and `parallel` branches. */
  scope?: string;
  /** The ledger tool name the step is recorded as. */
  tool: string;
}

/** Options of {@link withLedger}. */
export interface DurableLedgerOptions {
  /** Ledger options per tool name, for every step recorded as that tool. */
  tools?: Readonly<Record<string, LedgerStepToolOptions | undefined>>;
  /**
   * A part of every default ID after the execution's ARN, for a context whose step names repeat across
   * its siblings: a `map` item's or `parallel` branch's own stable identity (an order ID, not a loop
   * counter that could shift).
   */
  scope?: string;
  /**
   * Your own operation ID for a step, instead of {@link durableOperationId}. It must come from state
   * that is the same in every invocation of the execution.
   */
  operationId?(step: DurableStepPosition): string;
}

/** Steps of one durable context whose effect runs through the ledger. */
export interface LedgerSteps<TLogger extends DurableLogger = DurableLogger> {
  /**
   * A durable step (`context.step(name, …, config)`) whose effect runs at most once under the ledger.
   * `config` is the SDK's own step configuration; its `retryStrategy` decides when a step whose
   * operation is not settled is tried again (default: {@link LEDGER_STEP_RETRY}), and is never asked
   * about outcomes that cannot change.
   *
   * @throws TypeError when two ledger steps of one invocation derive the same operation ID (a step
   * name used twice, or `map` items without a `scope`); nothing is sent.
   */
  step<T>(
    name: string,
    call: LedgerStepCall<T>,
    execute: (ctx: LedgerStepContext<TLogger>) => Promise<T> | T,
    config?: StepConfig<T>,
  ): DurablePromise<T>;
}

/**
 * The outcome of a ledger step that is not a success: thrown inside the step, so the SDK's retry
 * strategy sees it. `code` is `not_settled` (waiting for approval, an operator, another claim or the
 * reconciler: retried), `failed` (a terminal failure, the stored one on a replay) or `rejected`
 * (approval denied or expired); the last two fail the step at once. After the step fails, the handler
 * sees the SDK's `StepError`, whose `cause.name` is `LedgerStepError`.
 *
 * @example
 * ```ts
 * await steps.step('refund', call, execute, {
 *   retryStrategy: (error, attempt) => ({ shouldRetry: attempt < 100, delay: { minutes: 10 } }),
 * });
 * ```
 */
export class LedgerStepError extends ToolLedgerError {
  /** The step's operation ID. */
  readonly operationId: string;
  /** The operation as the ledger reported it. */
  readonly operation: Operation;
  /** What a model would be told about it (the same text the model adapters give). */
  readonly model: ModelToolResult;
  /** True when retrying the step cannot change the outcome. */
  readonly final: boolean;

  constructor(step: string, outcome: RunOutcome) {
    const { operation } = outcome;
    const kind = outcome.outcome === 'succeeded' ? 'not_settled' : outcome.outcome;
    const why =
      kind === 'not_settled'
        ? `is ${operation.state}: ${outcome.model.envelope.note ?? 'not settled'}`
        : `ended ${operation.state}${operation.error ? ` (${operation.error.code})` : ''}`;
    super(kind, `ledger step "${step}" (operation ${operation.operation_id}) ${why}`);
    this.name = 'LedgerStepError';
    this.operationId = operation.operation_id;
    this.operation = operation;
    this.model = outcome.model;
    this.final = kind !== 'not_settled';
  }
}

/**
 * The retry strategy of a ledger step when you give none: patient enough for an unknown outcome to be
 * decided (the claim's lease, 60 s by default, then a reconciler pass, every minute by default): 10
 * attempts, delays from 10 s doubling to at most 2 min, half jitter (about 6 to 12 minutes in all). A
 * step that waits for people (approval, an operator) needs a strategy sized to that wait.
 */
export const LEDGER_STEP_RETRY = createRetryStrategy({
  maxAttempts: 10,
  initialDelay: { seconds: 10 },
  maxDelay: { minutes: 2 },
  backoffRate: 2,
  jitter: JitterStrategy.HALF,
});

/**
 * The default operation ID of a ledger step: `operationIdFrom([executionArn, scope?, name])`.
 *
 * Why it is stable: the SDK replays a durable function from the start in every invocation of an
 * execution, handing each the same execution ARN, and it checks that every step is called in the same
 * order with the same name (or fails the execution as non-deterministic). So a step re-run after an
 * interruption derives the ID the interrupted run used, and the ledger replays or reconciles it; a new
 * execution (another ARN) is a new operation. Step names are free text to the SDK, but here they must
 * be unique within the execution (or the scope): `withLedger` refuses a second step with the same ID.
 *
 * @example
 * ```ts
 * durableOperationId({ executionArn: 'exec-7f3a', name: 'charge-card', tool: 'payments.charge' });
 * // 'exec-7f3a/charge-card'
 * ```
 */
export function durableOperationId(step: DurableStepPosition): string {
  const parts =
    step.scope === undefined ? [step.executionArn, step.name] : [step.executionArn, step.scope, step.name];
  return operationIdFrom(parts);
}

/** The ledger's rule for an agent run ID (a label): 1 to 255 printable ASCII characters. */
const LABEL = /^[\x21-\x7e]{1,255}$/;

/**
 * Operation IDs claimed by ledger steps, per invocation (the Lambda context object, which the SDK
 * hands every context of one invocation and which a new invocation replaces). The SDK replays every
 * step it reaches in every invocation, so two steps that would share an ID meet in the same invocation
 * and the second is refused before it sends anything.
 */
const claimedIds = new WeakMap<object, Set<string>>();

/**
 * Ledger steps for a durable context: `withLedger(ledger, context, options).step(name, call, execute)`
 * is `context.step(name, fn)` whose effect runs at most once under the ledger, its operation ID the
 * execution's ARN and the step's name. The context itself is untouched: waits, callbacks, child
 * contexts and plain steps stay `context.…`.
 *
 * For a step in a `map` item or a `parallel` branch, make the steps from that branch's own context with
 * a `scope` that names the item (`withLedger(ledger, child, { scope: order.id })`).
 *
 * @example
 * ```ts
 * export const handler = withDurableExecution(async (order: Order, context: DurableContext) => {
 *   const steps = withLedger(ledger, context, { tools: { 'payments.charge': { reconcile: findCharge } } });
 *   const charge = await steps.step(
 *     'charge-card',
 *     { tool: 'payments.charge', arguments: { order: order.id, cents: order.cents } },
 *     (ctx) => payments.charge(order, { idempotencyKey: ctx.downstreamKey, signal: ctx.signal }),
 *   );
 *   await context.wait({ hours: 1 });
 *   return charge;
 * });
 * ```
 */
export function withLedger<TLogger extends DurableLogger>(
  ledger: LedgerRunner,
  context: DurableContext<TLogger>,
  options: DurableLedgerOptions = {},
): LedgerSteps<TLogger> {
  if (typeof ledger?.run !== 'function') throw new TypeError('withLedger needs a ledger client (with run)');
  const executionArn = context?.executionContext?.durableExecutionArn;
  if (typeof executionArn !== 'string' || executionArn.length === 0) {
    throw new TypeError('withLedger needs the durable context its handler received (no execution ARN found)');
  }
  if (options.scope !== undefined && (typeof options.scope !== 'string' || options.scope.length === 0)) {
    throw new TypeError('options.scope, when given, must be a non-empty string');
  }
  if (options.operationId !== undefined && typeof options.operationId !== 'function') {
    throw new TypeError('options.operationId, when given, must be a function');
  }
  const agentRunId = LABEL.test(executionArn) ? executionArn : undefined;

  return {
    step<T>(
      name: string,
      call: LedgerStepCall<T>,
      execute: (ctx: LedgerStepContext<TLogger>) => Promise<T> | T,
      config?: StepConfig<T>,
    ): DurablePromise<T> {
      if (typeof name !== 'string' || name.length === 0) {
        throw new TypeError('a ledger step needs a name: with the execution, it is the operation ID');
      }
      if (typeof call?.tool !== 'string') throw new TypeError(`step "${name}": call.tool must be a string`);
      if (typeof execute !== 'function') throw new TypeError(`step "${name}": execute must be a function`);
      const position: DurableStepPosition = { executionArn, name, tool: call.tool };
      if (options.scope !== undefined) position.scope = options.scope;
      const operationId = options.operationId ? options.operationId(position) : durableOperationId(position);
      claimOnce(context.lambdaContext, operationId, name);

      const { tool, arguments: args, ...own } = call;
      const settings: LedgerStepToolOptions<T> = {
        ...(options.tools?.[tool] as LedgerStepToolOptions<T> | undefined),
        ...own,
      };
      return context.step(
        name,
        async (stepContext) => {
          const input: RunInput<T> = {
            operationId,
            tool,
            arguments: args,
            execute: (ctx) => execute({ ...ctx, logger: stepContext.logger }),
          };
          if (agentRunId !== undefined) input.agentRunId = agentRunId;
          if (settings.reconcile !== undefined) input.reconcile = settings.reconcile.bind(settings);
          if (settings.sanitizeResult !== undefined)
            input.sanitizeResult = settings.sanitizeResult.bind(settings);
          if (settings.downstreamIdempotent !== undefined)
            input.downstreamIdempotent = settings.downstreamIdempotent;
          if (settings.leaseSeconds !== undefined) input.leaseSeconds = settings.leaseSeconds;
          if (settings.requiresApproval !== undefined) input.requiresApproval = settings.requiresApproval;
          if (settings.maxAttempts !== undefined) input.maxAttempts = settings.maxAttempts;
          if (settings.wait !== undefined) input.wait = settings.wait;
          const outcome = await ledger.run(input);
          if (outcome.outcome !== 'succeeded') throw new LedgerStepError(name, outcome);
          // The stored result is what `execute` returned, as JSON (after `sanitizeResult`): the value the
          // SDK itself would hand back from its checkpoint.
          return outcome.result as T;
        },
        { ...config, retryStrategy: ledgerRetry(config?.retryStrategy ?? LEDGER_STEP_RETRY) },
      );
    },
  };
}

/** Refuses a second ledger step of one invocation with the same operation ID. */
function claimOnce(invocation: unknown, operationId: string, name: string): void {
  if (typeof invocation !== 'object' || invocation === null) return;
  let ids = claimedIds.get(invocation);
  if (ids === undefined) {
    ids = new Set();
    claimedIds.set(invocation, ids);
  }
  if (ids.has(operationId)) {
    throw new TypeError(
      `ledger step "${name}" has the operation ID of an earlier step of this execution (${operationId}): ` +
        'give each ledger step its own name, and steps in map items or parallel branches a withLedger scope',
    );
  }
  ids.add(operationId);
}

/**
 * The SDK's retry strategy for a ledger step: outcomes that cannot change (a terminal failure, a
 * rejection, changed arguments, a refusal, bad input) fail the step at once; everything else (not
 * settled yet, no answer from the ledger) goes to `inner`.
 */
function ledgerRetry(
  inner: (error: Error, attemptsMade: number) => RetryDecision,
): (error: Error, attemptsMade: number) => RetryDecision {
  return (error, attemptsMade) => (isFinal(error) ? { shouldRetry: false } : inner(error, attemptsMade));
}

function isFinal(error: Error): boolean {
  if (error instanceof LedgerStepError) return error.final;
  if (error instanceof IdempotencyConflictError || error instanceof InvalidOperationIdError) return true;
  if (error instanceof ToolLedgerRequestError) {
    return error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;
  }
  // `run` checks its input before sending anything: a TypeError or RangeError is a mistake in the call.
  return error instanceof TypeError || error instanceof RangeError;
}
