import type { OperationState } from '../domain/states';

/**
 * The completion event: one per transition a caller or a person waits for, the same JSON on AWS
 * (EventBridge, the event's `detail`) and in local mode (a message on the local events queue). Shared
 * by the handlers and the construct (its rules and permissions name the source and detail type).
 */

/** EventBridge `source` of every ledger event. */
export const EVENT_SOURCE = 'tool-ledger';

/** EventBridge `detail-type` of a completion event. */
export const EVENT_DETAIL_TYPE = 'tool-ledger operation state changed';

/** States whose arrival is an event: the terminal ones, and those where a person must act. */
export const EVENT_STATES: ReadonlySet<OperationState> = new Set<OperationState>([
  'succeeded',
  'failed_terminal',
  'rejected',
  'awaiting_approval',
  'needs_reconciliation',
]);

/**
 * One completion event. Identities, digest, states and the outcome code: never arguments or results
 * (read the operation for those). `event_id` is the same every time this transition is delivered, so
 * a consumer that keeps the IDs it handled sees each transition once.
 */
export interface CompletionEvent {
  event_id: string;
  /** When the transition was written (the record's `updated_at`). */
  event_time: string;
  tenant: string;
  operation_id: string;
  agent_run_id: string | null;
  tool: string;
  state: OperationState;
  previous_state: OperationState | null;
  attempt: number;
  arguments_digest: string;
  outcome_code: string | null;
}
