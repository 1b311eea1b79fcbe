import { createHash } from 'node:crypto';
import { type CompletionEvent, EVENT_STATES } from '../contract/completion-event';
import type { OperationRecord } from '../domain/operation';
import type { OperationState } from '../domain/states';

/** The record fields an event is made of. */
export type EventSource = Pick<
  OperationRecord,
  'tenant' | 'operation_id' | 'tool' | 'state' | 'attempt' | 'arguments_digest' | 'updated_at'
> &
  Partial<Pick<OperationRecord, 'agent_run_id' | 'outcome_code'>>;

/**
 * The event of a write from `before` to `after`, or undefined when the write is not one anybody waits
 * for (the state did not change, or changed to a state that is not in {@link EVENT_STATES}).
 *
 * The ID is a digest of the tenant, operation, attempt, state and the time of the write: every
 * delivery of one transition carries the same ID, two transitions never share one.
 *
 * @example
 * ```ts
 * const event = completionEventOf('pending', record); // { state: 'succeeded', event_id: '…', … }
 * ```
 */
export function completionEventOf(
  before: OperationState | null,
  after: EventSource,
): CompletionEvent | undefined {
  if (before === after.state || !EVENT_STATES.has(after.state)) return undefined;
  return {
    event_id: eventIdOf(after),
    event_time: after.updated_at,
    tenant: after.tenant,
    operation_id: after.operation_id,
    agent_run_id: after.agent_run_id ?? null,
    tool: after.tool,
    state: after.state,
    previous_state: before,
    attempt: after.attempt,
    arguments_digest: after.arguments_digest,
    outcome_code: after.outcome_code ?? null,
  };
}

/** The event ID of a transition (32 hex digits). */
export function eventIdOf(after: EventSource): string {
  return createHash('sha256')
    .update(
      [after.tenant, after.operation_id, String(after.attempt), after.state, after.updated_at].join('\u0000'),
    )
    .digest('hex')
    .slice(0, 32);
}
