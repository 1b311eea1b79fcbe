import type { Operation } from '../api-types';

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
