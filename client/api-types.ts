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

/**
 * What a call came to, for code that branches on it. Mind `failed`: the API answers a terminal failure
 * with 201 (the operation is settled), so a status check or `res.ok` would read it as a success.
 *
 * | outcome | states | HTTP |
 * | --- | --- | --- |
 * | `succeeded` | `succeeded` | 201 |
 * | `failed` | `failed_terminal` | 201 |
 * | `rejected` | `rejected` (approval denied or expired) | 201 |
 * | `not_settled` | every other state: queued, waiting for approval, uncertain, with an operator | 202 |
 */
export type CallResultKind = 'succeeded' | 'failed' | 'rejected' | 'not_settled';

/** The {@link CallResultKind} of an operation's state. */
export function callResultKind(state: OperationState): CallResultKind {
  if (state === 'succeeded') return 'succeeded';
  if (state === 'failed_terminal') return 'failed';
  if (state === 'rejected') return 'rejected';
  return 'not_settled';
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
  /** Who runs the effect: the deployment (`ledger`, the default, absent in older servers) or the caller. */
  execution?: 'ledger' | 'caller';
  /**
   * The key targets dedupe on (caller-executed operations): the same for every attempt of this
   * operation, new for a later operation that reuses the ID after the record expired.
   */
  downstream_key?: string;
  /** Present while a person must act: an operator (`needs_reconciliation`) or an approver. */
  action_required?: 'operator_resolution' | 'approval';
  arguments?: unknown;
  [extra: string]: unknown;
}

/**
 * The claim on a caller-executed operation (`POST /v1/operations` with `execution: "caller"`, answered
 * 200): the right to run one attempt until `lease_expires_at`. The token is a secret of the claimant:
 * it is what heartbeats and the outcome are checked against, and the ledger shows it nowhere else.
 */
export interface Claim {
  token: string;
  attempt: number;
  /** ISO 8601, the ledger's clock. */
  lease_expires_at: string;
  downstream_key: string;
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
/** Who the credentials are to the ledger (`GET /v1/identity`): never the credential itself. */
export interface Identity {
  tenant: string;
  /** A label of the principal (`token:c91cbbed`, an IAM ARN), as history entries name it. */
  principal: string;
  roles: ('agent' | 'approver' | 'operator')[];
}

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
