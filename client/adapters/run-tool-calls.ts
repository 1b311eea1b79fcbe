import type { Operation, OperationState } from '../api-types';
import { isTerminalState } from '../api-types';
import { WaitTimeoutError } from '../errors';
import { operationIdFor } from '../operation-id';
import type { ToolLedgerClient } from '../tool-ledger-client';
import type { ToolNameMap } from './model-tools';
import {
  envelopeForFailure,
  envelopeForOperation,
  type RenderedResult,
  renderLedgerError,
} from './result-envelope';

/** A tool call as every provider's adapter hands it over: position is its index in the list. */
export interface ModelToolCall {
  /** The provider's ID for the call; used only to address the reply, never as the operation ID. */
  providerCallId: string;
  /** The name the model used. */
  modelName: string;
  /** Parsed arguments, or `invalid` when the model sent text that is not JSON. */
  arguments: { valid: true; value: unknown } | { valid: false };
}

/** Where the tool calls of one model response sit in the orchestrator's state. */
export interface ToolCallContext {
  /** The agent run the response belongs to. */
  agentRunId: string;
  /** The step (turn) that produced the response: persist it, so a regenerated response reuses it. */
  step: number | string;
  /** See `operationIdFor`. */
  scope?: string;
  /** Model-to-ledger names; without one, the model's names are sent unchanged. */
  names?: ToolNameMap;
  /**
   * How long to follow a call that is accepted but not settled (queued, uncertain) before answering
   * the model, ms. `awaiting_approval` and `needs_reconciliation` are never waited for: they need a
   * person. @default 20000
   */
  waitMs?: number;
  /** Run the calls one after another instead of together. @default false */
  sequential?: boolean;
}

/** The outcome of one tool call, before it is put in a provider's message format. */
export interface ToolCallResult extends RenderedResult {
  providerCallId: string;
  operationId: string;
  /** The ledger tool name, when the model's name was known. */
  tool: string | undefined;
  /** The last operation body seen, when the ledger decided anything. */
  operation?: Operation;
  /** The envelope as JSON: what the model is sent. */
  content: string;
}

/** The client methods the adapters use. */
export type ToolCaller = Pick<ToolLedgerClient, 'call' | 'waitFor'>;

const STOP_WAITING: readonly OperationState[] = [
  'succeeded',
  'failed_terminal',
  'rejected',
  'awaiting_approval',
  'needs_reconciliation',
];

/**
 * Runs a model response's tool calls through the ledger, one operation per call, with IDs from
 * `operationIdFor({ agentRunId, step, callIndex })`, where `callIndex` is the call's position among
 * the response's tool calls. Results come back in the calls' order.
 *
 * Errors the ledger reports about a call (conflict, refusal, no answer in time) become that call's
 * result, so the model hears about them; errors of the client's setup (e.g. missing credentials)
 * are thrown.
 *
 * @example
 * ```ts
 * const results = await runToolCalls(client, calls, { agentRunId: 'run-42', step: 3, names });
 * ```
 */
export async function runToolCalls(
  client: ToolCaller,
  calls: readonly ModelToolCall[],
  context: ToolCallContext,
): Promise<ToolCallResult[]> {
  const runOne = (call: ModelToolCall, callIndex: number) => runToolCall(client, call, callIndex, context);
  if (context.sequential) {
    const results: ToolCallResult[] = [];
    for (const [index, call] of calls.entries()) results.push(await runOne(call, index));
    return results;
  }
  return Promise.all(calls.map(runOne));
}

async function runToolCall(
  client: ToolCaller,
  call: ModelToolCall,
  callIndex: number,
  context: ToolCallContext,
): Promise<ToolCallResult> {
  const operationId = operationIdFor({
    agentRunId: context.agentRunId,
    step: context.step,
    callIndex,
    ...(context.scope === undefined ? {} : { scope: context.scope }),
  });
  const tool = context.names ? context.names.toLedger(call.modelName) : call.modelName;
  const base = { providerCallId: call.providerCallId, operationId, tool };
  if (tool === undefined) {
    return finish(
      base,
      envelopeForFailure(operationId, 'refused', {
        code: 'tool_unknown',
        message: 'there is no tool of this name; nothing ran',
      }),
    );
  }
  if (!call.arguments.valid) {
    return finish(
      base,
      envelopeForFailure(operationId, 'invalid_arguments', {
        code: 'invalid_arguments_json',
        message: 'the arguments are not valid JSON; nothing ran',
      }),
    );
  }
  let operation: Operation | undefined;
  try {
    const outcome = await client.call({
      operationId,
      tool,
      arguments: call.arguments.value,
      agentRunId: context.agentRunId,
    });
    operation = outcome.operation;
    const waitMs = context.waitMs ?? 20_000;
    if (!STOP_WAITING.includes(operation.state) && !isTerminalState(operation.state) && waitMs > 0) {
      try {
        operation = await client.waitFor(operationId, { timeoutMs: waitMs, until: STOP_WAITING });
      } catch (error) {
        if (!(error instanceof WaitTimeoutError)) throw error;
        operation = error.lastOperation ?? operation;
      }
    }
    return finish({ ...base, operation }, envelopeForOperation(operation, outcome.replayed));
  } catch (error) {
    const rendered = renderLedgerError(operationId, error);
    if (!rendered) throw error;
    return finish(operation ? { ...base, operation } : base, rendered);
  }
}

function finish(
  base: Pick<ToolCallResult, 'providerCallId' | 'operationId' | 'tool' | 'operation'>,
  rendered: RenderedResult,
): ToolCallResult {
  return { ...base, ...rendered, content: JSON.stringify(rendered.envelope) };
}
