import type { CompletionEvent } from '../contract/completion-event';
import { downstreamKey } from './downstream-key';
import type { PayloadRef, ResultUnavailable } from './payload';
import type { OperationPolicy } from './policy';
import type { OperationState } from './states';

/** A stored error: a stable code and a message that never contains argument values. */
export interface OperationError {
  code: string;
  message: string;
  /** Target status where one exists (e.g. the webhook's HTTP status). */
  status?: number;
}

/** The decision a human made on an operation that required approval. */
export interface ApprovalRecord {
  decision: 'approve' | 'reject';
  /** Principal label of the approver (never a token). */
  by: string;
  at: string;
  arguments_digest: string;
}

/** An outcome reported by the owner of an attempt that had already been superseded. */
export interface LateOutcome {
  attempt: number;
  state: OperationState;
  outcome_code: string;
  at: string;
}

/** One entry of the bounded state history kept on the record. */
export interface HistoryEntry {
  at: string;
  from: OperationState | null;
  to: OperationState;
  attempt: number;
  by: string;
  code?: string;
}

/** True for a record (or snapshot) of an operation its caller executes. */
export function isCallerExecuted(record: { policy?: OperationPolicy | undefined }): boolean {
  return record.policy?.execution === 'caller';
}

/**
 * The persisted operation, one DynamoDB item. Attribute names are the item's own, so the mapping
 * between store and domain is the identity.
 */
export interface OperationRecord {
  pk: string;
  sk: string;
  tenant: string;
  operation_id: string;
  tool: string;
  /** RFC 8785 canonical JSON of the normalized arguments (kept brotli-compressed when that is smaller). */
  arguments: string;
  arguments_digest: string;
  state: OperationState;
  attempt: number;
  /** The attempt budget, bound at reservation (part of the policy: `boundPolicy` in functions/domain/policy.ts reads both). */
  max_attempts: number;
  /**
   * The policy the operation was reserved under; it governs every later step (functions/domain/policy.ts).
   * Absent on records reserved before it was stored: the current tool's policy stands in.
   */
  policy?: OperationPolicy;
  /** Retention of the terminal record, seconds. */
  retention_seconds: number;
  requested_by: string;
  /**
   * The requester is unknown: the work came through a queue that carries no identity (local mode).
   * No approval can be told apart from a self-approval.
   */
  requester_unidentified?: boolean;
  /** Unique per reservation attempt: recognises our own PutItem whose response was lost. */
  reservation_id: string;
  /** The record's format (functions/contract/table.ts `RECORD_FORMAT`); absent on format 1 records written before it was stored. */
  record_format?: number;
  agent_run_id?: string;
  lease_owner?: string;
  /** Epoch milliseconds. */
  lease_expires_at?: number;
  /**
   * JSON text of the sanitized result (or `null`): in the item, or, when `result_ref` names a body kept
   * elsewhere, absent until loaded (engine/payloads.ts `loadResult`).
   */
  result?: string;
  /** Where a large result is kept, written before the commit that points to it. */
  result_ref?: PayloadRef;
  /** Why a succeeded record holds no result (`result` is `null`). */
  result_unavailable?: ResultUnavailable;
  error?: OperationError;
  outcome_code?: string;
  /** Lease owner that wrote the last outcome; read back to verify a commit whose response was lost. */
  outcome_by?: string;
  /**
   * The last outcome commit's own nonce: a commit whose condition fails and finds its nonce knows its
   * own earlier write landed (a lost response); the same outcome written by another delivery of the
   * same message (a caller's post sent twice) has another one.
   */
  outcome_write?: string;
  /** The last caller claim's own nonce, for the same reason: a claim sent twice lands once. */
  claim_write?: string;
  created_at: string;
  updated_at: string;
  completed_at?: string;
  /** Epoch seconds; only on terminal records (DynamoDB TTL). */
  expires_at?: number;
  /** Sparse attention GSI: present only while the reconciler has something to do. */
  attention_shard?: string;
  /** Epoch milliseconds at which the reconciler should look next. */
  attention_at?: number;
  /** Sparse operators' GSI: the tenant, present only on unresolved records. */
  unresolved_tenant?: string;
  /** Epoch milliseconds of creation, for newest-first listing. */
  unresolved_at?: number;
  /**
   * The `operations` index: the tenant's partition (sharded as `unresolved_tenant` is), written once
   * at reservation and never changed. Absent on records reserved before the index existed.
   */
  operations_tenant?: string;
  /** Epoch milliseconds of creation, the `operations` index's sort key; never changed. */
  operations_at?: number;
  /** Epoch milliseconds; awaiting_approval only. */
  approval_deadline?: number;
  approval?: ApprovalRecord;
  resolved_by?: string;
  reconciled?: boolean;
  /** Principal of the agent whose verdict decided an uncertain attempt of an operation its caller executes. */
  reconciled_by?: string;
  /** How many times the reconciler asked the tool and got `unknown`. */
  reconcile_checks?: number;
  /** How many times a reconciler pass ran out of time for this record and deferred it (its backoff). */
  reconcile_deferrals?: number;
  /** How many times the reconciler re-sent the work message of a `queued` record. */
  requeue_count?: number;
  /**
   * An earlier attempt's outcome was uncertain and the operation was retried only because the target
   * dedupes on the downstream key: the effect may have happened even if later attempts fail.
   */
  maybe_applied?: boolean;
  late_outcome?: LateOutcome;
  history?: HistoryEntry[];
  /**
   * The lease owners (claim token hashes) of this reservation's superseded caller attempts, oldest
   * first, at most `max_attempts`: an outcome posted with one of their tokens is authentic, and is kept
   * as `late_outcome`; any other token changes nothing. Never shown.
   */
  superseded_claims?: string[];
  /**
   * Completion events written with the transition that made them and not yet sent, by event ID: where
   * the engine sends events itself (local mode, which has no table stream), a send lost to a crash is
   * sent again from here, with the same ID. Cleared once sent. Never shown.
   */
  unsent_events?: Record<string, CompletionEvent>;
}

/**
 * The fields of an operation a caller is shown (the body of the contract's §5): what {@link toView} reads. A ledger
 * record has them all; a read tool's answer (engine/read-tool-path.ts) has them without being a record.
 */
export type OperationSnapshot = Pick<
  OperationRecord,
  | 'operation_id'
  | 'tool'
  | 'state'
  | 'arguments'
  | 'arguments_digest'
  | 'attempt'
  | 'created_at'
  | 'result'
  | 'result_ref'
  | 'result_unavailable'
  | 'error'
  | 'outcome_code'
  | 'completed_at'
  | 'expires_at'
  | 'agent_run_id'
  | 'approval'
  | 'approval_deadline'
  | 'resolved_by'
  | 'reconciled'
  | 'reconciled_by'
  | 'late_outcome'
  | 'lease_expires_at'
  | 'history'
> &
  Partial<Pick<OperationRecord, 'tenant' | 'reservation_id' | 'policy'>>;

/** The public view of an operation (the response body of the contract's §5). */
export interface OperationView {
  operation_id: string;
  tool: string;
  state: OperationState;
  arguments_digest: string;
  attempt: number;
  replayed: boolean;
  /** The stored result, whole; `null` when there is none (see `result_unavailable`). */
  result: unknown;
  /** Why a succeeded operation has `result: null`: the result was not kept, and this says why. */
  result_unavailable?: ResultUnavailable;
  error: { code: string; message: string; status?: number } | null;
  created_at: string;
  completed_at: string | null;
  agent_run_id?: string;
  approval?: ApprovalRecord;
  approval_deadline?: string;
  resolved_by?: string;
  reconciled?: boolean;
  reconciled_by?: string;
  late_outcome?: LateOutcome;
  lease_expires_at?: string;
  history?: HistoryEntry[];
  arguments?: unknown;
  /**
   * Present while the operation waits for a person: `operator_resolution` in `needs_reconciliation`
   * (the reconciler could not decide; an operator must resolve it, sending the attempt shown), or
   * `approval` in `awaiting_approval`. Retrying the call cannot move it.
   */
  action_required?: 'operator_resolution' | 'approval';
  /** `caller` on an operation its caller executes (the contract, §14); absent when the ledger runs it. */
  execution?: 'caller';
  /**
   * The key the caller passes to the target of an operation it executes (the same for every attempt):
   * not a secret, since any agent of the tenant needs it to ask the target what happened.
   */
  downstream_key?: string;
}

/** Options for {@link toView}. */
export interface ViewOptions {
  replayed?: boolean;
  includeArguments?: boolean;
  includeHistory?: boolean;
}

/**
 * The payloads a view needs were not loaded: a record whose result (or arguments) is kept elsewhere
 * reaches {@link toView} only after engine/payloads.ts loaded it. Rendering `null` instead would be a
 * wrong result, so it throws (an internal error, never an answer).
 */
export class PayloadNotLoadedError extends Error {
  constructor(part: 'result' | 'arguments') {
    super(`the operation's ${part} is kept elsewhere and was not loaded before rendering`);
    this.name = 'PayloadNotLoadedError';
  }
}

/**
 * Renders a record as the API's operation body. A result or arguments kept outside the item must have
 * been loaded first (engine/payloads.ts `withPayloads`).
 *
 * @example
 * ```ts
 * toView(record, { replayed: true }).replayed; // true
 * ```
 */
export function toView(record: OperationSnapshot, options: ViewOptions = {}): OperationView {
  const view: OperationView = {
    operation_id: record.operation_id,
    tool: record.tool,
    state: record.state,
    arguments_digest: record.arguments_digest,
    attempt: record.attempt,
    replayed: options.replayed ?? false,
    result: resultOf(record),
    error: record.error ?? null,
    created_at: record.created_at,
    completed_at: record.completed_at ?? null,
  };
  if (record.agent_run_id !== undefined) view.agent_run_id = record.agent_run_id;
  if (record.approval !== undefined) view.approval = record.approval;
  if (record.approval_deadline !== undefined)
    view.approval_deadline = new Date(record.approval_deadline).toISOString();
  if (record.resolved_by !== undefined) view.resolved_by = record.resolved_by;
  if (record.reconciled !== undefined) view.reconciled = record.reconciled;
  if (record.reconciled_by !== undefined) view.reconciled_by = record.reconciled_by;
  if (record.late_outcome !== undefined) view.late_outcome = record.late_outcome;
  if (record.state === 'pending' && record.lease_expires_at !== undefined) {
    view.lease_expires_at = new Date(record.lease_expires_at).toISOString();
  }
  if (isCallerExecuted(record) && record.tenant !== undefined && record.reservation_id !== undefined) {
    view.execution = 'caller';
    view.downstream_key = downstreamKey(record.tenant, record.operation_id, record.reservation_id);
  }
  if (record.state === 'needs_reconciliation') view.action_required = 'operator_resolution';
  if (record.state === 'awaiting_approval') view.action_required = 'approval';
  if (options.includeHistory && record.history) view.history = record.history;
  const unavailable =
    record.result_unavailable ??
    (record.state === 'succeeded' && record.outcome_code === 'sanitize_failed'
      ? ({ code: 'sanitize_failed' } as const)
      : undefined);
  if (unavailable !== undefined) view.result_unavailable = unavailable;
  if (options.includeArguments) view.arguments = JSON.parse(record.arguments);
  return view;
}

function resultOf(record: OperationSnapshot): unknown {
  if (record.result !== undefined) return JSON.parse(record.result);
  if (record.result_ref !== undefined) throw new PayloadNotLoadedError('result');
  return null;
}
