import { TRANSITION_LOG_MESSAGE } from '../contract/transition-log';
import type { OperationState } from '../domain/states';
import { logger } from './logger';

/**
 * One log line per state transition, with the fields of the contract's §9 and the tenant (so that an
 * operator of a deployment serving many tenants can tell whose operation is stuck). Values are
 * identities, digests, states and codes: never arguments, results, headers or tool error messages.
 */
export interface TransitionLogLine {
  event_time: string;
  /** The tenant the operation belongs to (the key scope; never from a request body). */
  tenant: string;
  agent_run_id: string | null;
  operation_id: string;
  tool_name: string;
  arguments_digest: string;
  attempt_number: number;
  state_before: OperationState | null;
  state_after: OperationState;
  replayed: boolean;
  target_class: string;
  outcome_code: string | null;
  duration_ms: number;
  request_id: string;
}

/** The fields of a transition line, in the order of the contract's §9 (the tenant after the time). */
export const TRANSITION_LOG_FIELDS = [
  'event_time',
  'tenant',
  'agent_run_id',
  'operation_id',
  'tool_name',
  'arguments_digest',
  'attempt_number',
  'state_before',
  'state_after',
  'replayed',
  'target_class',
  'outcome_code',
  'duration_ms',
  'request_id',
] as const satisfies readonly (keyof TransitionLogLine)[];

/** Where transition lines go; tests pass a collecting sink. */
export type TransitionSink = (line: TransitionLogLine) => void;

/** Writes a transition line through the Powertools logger. */
export const logTransition: TransitionSink = (line) => {
  // Each line is built for this call alone (engine/transitions.ts): no copy before Powertools merges it.
  logger.info(TRANSITION_LOG_MESSAGE, line as unknown as Record<string, unknown>);
};
