import type { Operation } from '../api-types';
import {
  DeadlineExceededError,
  IdempotencyConflictError,
  OutcomeNotRecordedError,
  ToolLedgerRequestError,
} from '../errors';

/** Told to the model when the ledger returned a stored success instead of running the action. */
export const REPLAY_NOTE = 'this action had already been performed; its original result is returned';

/** Told to the model when a stored failure or rejection was returned instead of running the action. */
export const REPLAY_FAILURE_NOTE = 'this action had already been attempted; its original outcome is returned';

/** Told to the model while an action waits for a person. */
export const AWAITING_APPROVAL_NOTE =
  'this action is waiting for human approval and has not been performed yet; do not request it again';

/** Told to the model when the outcome is still open. */
export const NOT_SETTLED_NOTE =
  'the outcome of this action is not known yet and it may already have been performed; it is being reconciled, do not request it again';

/** Told to the model when the ledger did not answer in time. */
export const NO_ANSWER_NOTE =
  'the tool ledger did not answer in time; the action may or may not have been performed, do not request it again';

/**
 * What the model reads as a tool's result: a JSON object that states the outcome explicitly, so the
 * model is told that an action already happened (`replayed: true` plus a note) rather than left to
 * infer it from a result it may not remember asking for.
 */
export interface ToolResultEnvelope {
  /** The operation ID (lets people match the model's transcript with the ledger). */
  operation_id: string;
  /**
   * The ledger state, or where the client stopped before the ledger decided: `conflict` (422),
   * `refused` (other 4xx), `invalid_arguments` (not JSON), `no_answer` (deadline passed).
   */
  state: string;
  replayed: boolean;
  note?: string;
  result?: unknown;
  error?: { code: string; message: string; status?: number; issues?: unknown };
}

/** An envelope and whether it reports a failure (Anthropic's `is_error`). */
export interface RenderedResult {
  envelope: ToolResultEnvelope;
  isError: boolean;
}

/**
 * The envelope for an operation the ledger reported. `replayed` comes from the call, because a later
 * `GET` does not know whether this request ran the effect.
 *
 * @example
 * ```ts
 * envelopeForOperation(op, true).envelope.note; // REPLAY_NOTE when op.state is 'succeeded'
 * ```
 */
export function envelopeForOperation(operation: Operation, replayed: boolean): RenderedResult {
  const envelope: ToolResultEnvelope = {
    operation_id: operation.operation_id,
    state: operation.state,
    replayed,
  };
  switch (operation.state) {
    case 'succeeded':
      if (replayed) envelope.note = REPLAY_NOTE;
      envelope.result = operation.result ?? null;
      return { envelope, isError: false };
    case 'failed_terminal':
    case 'rejected':
      if (replayed) envelope.note = REPLAY_FAILURE_NOTE;
      if (operation.error) envelope.error = operation.error;
      return { envelope, isError: true };
    case 'awaiting_approval':
      envelope.note = AWAITING_APPROVAL_NOTE;
      return { envelope, isError: false };
    default:
      envelope.note = NOT_SETTLED_NOTE;
      return { envelope, isError: false };
  }
}

/**
 * The envelope for a call that ended before the ledger decided anything about it.
 *
 * @example
 * ```ts
 * envelopeForFailure('run-1:s0:c2', 'invalid_arguments', { code: 'invalid_arguments_json', message: '...' });
 * ```
 */
export function envelopeForFailure(
  operationId: string,
  state: 'conflict' | 'refused' | 'invalid_arguments' | 'no_answer',
  error: NonNullable<ToolResultEnvelope['error']>,
  note?: string,
): RenderedResult {
  const envelope: ToolResultEnvelope = { operation_id: operationId, state, replayed: false };
  if (note !== undefined) envelope.note = note;
  envelope.error = error;
  return { envelope, isError: true };
}

/** What a framework hands its model as a tool's result: the envelope, as text, and whether it is a failure. */
export interface ModelToolResult extends RenderedResult {
  /** The envelope as JSON: what the model is sent. */
  content: string;
}

/** Adds the text the model reads to a rendered envelope. */
export function toModelToolResult(rendered: RenderedResult): ModelToolResult {
  return { ...rendered, content: JSON.stringify(rendered.envelope) };
}

/**
 * What the model is told about an error the ledger reported instead of an outcome: a conflict (422),
 * another refusal (4xx, with validation `issues`), no answer in time, an outcome that could not be
 * recorded. Returns `undefined` for anything else (a setup error such as missing credentials, or the
 * caller's own abort), which should be thrown, not shown to the model.
 *
 * @example
 * ```ts
 * try {
 *   return (await ledger.run(input)).model.content;
 * } catch (error) {
 *   const told = modelResultForError(input.operationId, error);
 *   if (!told) throw error;
 *   return told.content;
 * }
 * ```
 */
export function modelResultForError(operationId: string, error: unknown): ModelToolResult | undefined {
  const rendered = renderLedgerError(operationId, error);
  return rendered && toModelToolResult(rendered);
}

/** The envelope for an error the ledger reported about a call, or `undefined` when it is not one. */
export function renderLedgerError(operationId: string, error: unknown): RenderedResult | undefined {
  if (error instanceof IdempotencyConflictError) {
    return envelopeForFailure(operationId, 'conflict', {
      code: error.code,
      message: 'this call was already made at this step with different arguments; nothing ran',
    });
  }
  if (error instanceof ToolLedgerRequestError) {
    const detail: NonNullable<ToolResultEnvelope['error']> = {
      code: error.code,
      // `detail` carries the domain's message, which never contains argument values (the tool-ledger
      // contract, §5).
      message: firstString(error.problem.detail, error.problem.title) ?? 'the tool ledger refused the call',
    };
    if (error.problem.issues !== undefined) detail.issues = error.problem.issues;
    return envelopeForFailure(operationId, 'refused', detail);
  }
  if (error instanceof DeadlineExceededError) {
    return envelopeForFailure(
      operationId,
      'no_answer',
      { code: error.code, message: 'no answer before the deadline' },
      NO_ANSWER_NOTE,
    );
  }
  if (error instanceof OutcomeNotRecordedError) {
    return envelopeForFailure(
      operationId,
      'no_answer',
      { code: error.code, message: 'the action ran but its outcome could not be recorded in time' },
      NO_ANSWER_NOTE,
    );
  }
  return undefined;
}

function firstString(...values: unknown[]): string | undefined {
  return values.find((value): value is string => typeof value === 'string' && value.length > 0);
}
