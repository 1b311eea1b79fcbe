import type { HistoryEntry, OperationRecord } from '../domain/operation';
import type { OperationState, TransitionName } from '../domain/states';
import type { ReadCache } from './read-cache';

/**
 * What the engine needs from storage, and nothing of how it is stored: the port the engine owns and
 * ledger/ implements on DynamoDB (functions/ledger/ledger-store.ts). Every write is one conditional
 * write of one record (no transactions); a write whose condition fails reports what it found instead
 * of overwriting it. Every transition names itself, and the store asserts it against the state machine
 * (functions/domain/states.ts) before sending it.
 */

/** Key of one operation item. */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** What a conditional update expects to find. Every field given becomes part of the condition. */
export interface Expectation {
  /**
   * The state the record was read in: exactly `[record.state]` (see {@link OperationStore.transition}).
   * A list so that the state machine's check reads the same for every write.
   */
  states: readonly OperationState[];
  attempt?: number;
  leaseOwner?: string;
  digest?: string;
  /** Only with `lease_expires_at < leaseExpiredBefore` (epoch ms). */
  leaseExpiredBefore?: number;
  /** Only with `lease_expires_at > leaseLiveAfter` (epoch ms): a claim still live when the write lands. */
  leaseLiveAfter?: number;
  /** Only while `reconcile_checks` is exactly this (absent counts as 0). */
  reconcileChecks?: number;
  /** Only while `attention_at` is exactly this: the reconciler's optimistic lock on a due record. */
  attentionAt?: number;
  /**
   * Only while the record is still this reservation: a decision read from one operation never lands on
   * a new operation that reused the expired key, however long the decision took.
   */
  reservationId?: string;
  /**
   * Only while `approval_deadline > approvalDeadlineAfter` (epoch ms): an approver's decision that
   * reaches the table after the deadline fails, however long the request took to get there.
   */
  approvalDeadlineAfter?: number;
}

/**
 * What a late-outcome annotation expects to find: the record as it was read, still the reservation
 * the superseded attempt belonged to, and past that attempt.
 */
export interface LateOutcomeExpectation {
  /** The superseded attempt: the record's attempt must be above it. */
  supersededAttempt: number;
  /** The state the record was read in. */
  state: OperationState;
  /** The reservation the superseded attempt ran under. */
  reservationId: string;
}

/** One conditional transition of one item. */
export interface TransitionWrite {
  /** The transition(s) this write performs; every expected state must be allowed by one of them. */
  transition: TransitionName | readonly TransitionName[];
  expect: Expectation;
  /** The new state; omitted by a postponement (`defer_attention`), which keeps the state it finds. */
  to?: OperationState;
  set: Partial<OperationRecord>;
  remove?: readonly (keyof OperationRecord)[];
  history?: HistoryEntry;
}

/** Result of a conditional write: the new record, or what was found instead. */
export type WriteResult =
  | { ok: true; record: OperationRecord }
  | { ok: false; current: OperationRecord | undefined };

/** Result of a reservation. */
export type ReserveResult = { created: true } | { created: false; existing: OperationRecord | undefined };

/** A page of records from a GSI. */
export interface Page {
  items: OperationRecord[];
  /** Opaque; pass back to continue. */
  cursor: string | undefined;
}

/** Which listing index a tenant's listing reads (functions/contract/table.ts). */
export type ListingIndex = 'unresolved' | 'operations';

/**
 * One page of one tenant's listing. The engine (engine/read-operations.ts) picks the index and the
 * filters; the store applies each filter in DynamoDB where the index projects its attribute (the
 * state on `unresolved`, the tool on `operations`) and to the items otherwise, and never returns more
 * than `limit` records.
 */
export interface ListingQuery {
  /** `unresolved`: the reconciliation queue; `operations`: every operation reserved since the index exists. */
  index: ListingIndex;
  /** Records wanted at most. */
  limit: number;
  /**
   * Index entries to read per shard in this call when a filter needs the items (most of what is read
   * may not match); without one, `limit` is read. @default limit
   */
  read?: number;
  /** Opaque; from a previous page of the same index. */
  cursor?: string;
  /** The tenant's partitions of the index. @default 1 */
  shards?: number;
  /** Creation time window, epoch ms: `since <= created < until`. */
  since?: number;
  until?: number;
  /** Only records in one of these states. */
  states?: readonly OperationState[];
  /** Only records of this tool. */
  tool?: string;
  /** A further test on each whole record (the engine's: not expired). */
  accept?: (record: OperationRecord) => boolean;
}

/** A listing page, and how many index entries it went through to find its records. */
export interface ListingPage extends Page {
  /** Index entries consumed (matched or not): what the next page starts after. */
  examined: number;
}

/** A paging cursor the store did not issue (the caller gets 400 `validation_failed`, never a 5xx). */
export class InvalidCursorError extends Error {
  constructor() {
    super('invalid cursor');
    this.name = 'InvalidCursorError';
  }
}

/** What one count of the unresolved operations found (engine/open-operations-gauge.ts). */
export interface OpenOperations {
  /** Every unresolved record (awaiting_approval, queued, pending, uncertain, failed_retryable, needs_reconciliation). */
  unresolved: number;
  /** Records in `needs_reconciliation`: waiting for an operator. */
  needsReconciliation: number;
}

/**
 * The ledger's storage.
 *
 * @example
 * ```ts
 * const deps = createDeps({ store: new LedgerStore({ client, tableName }), tools, config, queue });
 * const record = await deps.store.get(operationKey('acme', 'run-42'));
 * ```
 */
export interface OperationStore {
  /** Reads one record with a strongly consistent read. */
  get(key: ItemKey): Promise<OperationRecord | undefined>;
  /**
   * Creates `item` if no record exists or the existing one is terminal and expired
   * (`expires_at < nowSeconds`); otherwise reports the existing record.
   */
  reserve(item: OperationRecord, nowSeconds: number): Promise<ReserveResult>;
  /**
   * One conditional write that performs a named transition on `record`, the record as the caller read
   * it, conditioned on the one state it was read in (`write.expect.states` must be exactly
   * `[record.state]`) and on everything else `write.expect` names. On success the result is `record`
   * with the write applied; on a failed condition, the record as it is now.
   */
  transition(record: OperationRecord, write: TransitionWrite): Promise<WriteResult>;
  /**
   * Notes a superseded attempt's outcome on a record, touching nothing else, only while the record is
   * what `expect` says; otherwise reports what it found.
   */
  annotateLateOutcome(
    key: ItemKey,
    expect: LateOutcomeExpectation,
    lateOutcome: OperationRecord['late_outcome'],
  ): Promise<WriteResult>;
  /**
   * Forgets one of a record's unsent completion events once it was sent (touching nothing else); an
   * event already forgotten, or a record gone, is no error.
   */
  clearUnsentEvent(key: ItemKey, eventId: string): Promise<void>;
  /** One page of a shard of the reconciler's view: records due by `dueBy`, oldest first. */
  queryAttention(shard: string, dueBy: number, limit: number, cursor?: string): Promise<Page>;
  /** One page of one tenant's due records (an operator's reconcile pass). */
  queryTenantAttention(
    tenant: string,
    dueBy: number,
    limit: number,
    cursor?: string,
    shards?: number,
  ): Promise<Page>;
  /** One page of a tenant's listing, newest first (see {@link ListingQuery}). */
  listTenant(tenant: string, query: ListingQuery): Promise<ListingPage>;
  /** Counts the unresolved records of the whole deployment (a cost that grows with them, not the table). */
  countOpen(): Promise<OpenOperations>;
  /** The short-lived cache of read-tool results (the contract, §4, `effect: 'read'`), kept beside the ledger. */
  readonly readCache: ReadCache;
}
