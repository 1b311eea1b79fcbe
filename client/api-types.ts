/**
 * The wire shapes of the tool-ledger HTTP API (the tool-ledger contract, §5), as the client sees them.
 * They are written out here rather than imported from `functions/` because the client ships to agents
 * on its own and must not pull in the server's code; the server's `OperationView` is the source of truth.
 */

/** Every state an operation can be in (the tool-ledger contract, §2). */
export type OperationState =
  | 'awaiting_approval'
  | 'queued'
  | 'pending'
  | 'succeeded'
  | 'failed_terminal'
  | 'failed_retryable'
  | 'uncertain'
  | 'needs_reconciliation'
  | 'rejected';

/** States that never change again: an outcome in one of them is final and safe to act on. */
export const TERMINAL_STATES: ReadonlySet<OperationState> = new Set([
  'succeeded',
  'failed_terminal',
  'rejected',
]);

/**
 * True when the state is final.
 *
 * @example
 * ```ts
 * isTerminalState('succeeded'); // true
 * isTerminalState('uncertain'); // false: wait for the reconciler
 * ```
 */
export function isTerminalState(state: OperationState): boolean {
  return TERMINAL_STATES.has(state);
}

/** A stored error: a stable code and a message without argument values. */
export interface OperationErrorView {
  code: string;
  message: string;
  /** The target's own status where one exists (e.g. a webhook's HTTP status). */
  status?: number;
}

/**
 * The body of every operation response (the tool-ledger contract, §5). Unknown extra fields are kept as
 * they come.
 */
export interface Operation {
  operation_id: string;
  tool: string;
  state: OperationState;
  arguments_digest: string;
  attempt: number;
  replayed: boolean;
  result: unknown;
  error: OperationErrorView | null;
  created_at: string;
  completed_at: string | null;
  agent_run_id?: string;
  approval_deadline?: string;
  resolved_by?: string;
  reconciled?: boolean;
  lease_expires_at?: string;
  /** Present while a person must act: an operator (`needs_reconciliation`) or an approver. */
  action_required?: 'operator_resolution' | 'approval';
  arguments?: unknown;
  [extra: string]: unknown;
}

/** A tool as published at `GET /v1/tools`. */
export interface ToolDescription {
  name: string;
  description: string;
  effect: 'write' | 'read';
  requires_approval: boolean;
  timeout_ms: number;
  max_attempts: number;
  /** JSON Schema of the tool's arguments (zod's `toJSONSchema`, input side). */
  input_schema: unknown;
}

/** One page of `GET /v1/operations`. */
export interface OperationPage {
  operations: Operation[];
  /** Opaque; pass it back to get the next page. Absent on the last page. */
  cursor?: string;
}

/** An RFC 9457 problem document as tool-ledger returns it: always with a stable `code`. */
export interface Problem {
  code: string;
  title?: string;
  status?: number;
  detail?: string;
  [extra: string]: unknown;
}
