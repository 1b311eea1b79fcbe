import type { LedgerConfig } from '../config';
import { unresolvedPartition } from '../contract/index-shards';
import { attentionShard } from '../contract/keys';
import { LEDGER_TABLE } from '../contract/table';
import { isCallerExecuted, type OperationRecord } from '../domain/operation';
import type { OperationState } from '../domain/states';

/**
 * The index attributes an unresolved record carries: the attention GSI (when the reconciler has
 * something to do, at `attentionAt`) and the operators' GSI (always, until terminal).
 */
export function unresolvedFields(
  record: Pick<OperationRecord, 'pk' | 'tenant' | 'created_at'>,
  config: LedgerConfig,
  attentionAt: number | undefined,
): Partial<OperationRecord> {
  const fields: Partial<OperationRecord> = {
    unresolved_tenant: unresolvedPartition(record.tenant, record.pk, config.unresolvedShards),
    unresolved_at: Date.parse(record.created_at),
  };
  if (attentionAt !== undefined) {
    fields.attention_shard = attentionShard(record.pk, config.attentionShards);
    fields.attention_at = attentionAt;
  }
  return fields;
}

/**
 * The `operations` index attributes of a new record: its tenant's partition (the same shard as its
 * `unresolved` entry) and its creation time. Written once, at reservation: no transition sets or
 * removes them, so the index entry is never rewritten while the operation moves through its states.
 */
export function operationsIndexFields(
  record: Pick<OperationRecord, 'pk' | 'tenant' | 'created_at'>,
  config: LedgerConfig,
): Pick<OperationRecord, 'operations_tenant' | 'operations_at'> {
  return {
    operations_tenant: unresolvedPartition(record.tenant, record.pk, config.unresolvedShards),
    operations_at: Date.parse(record.created_at),
  };
}

const ATTENTION = LEDGER_TABLE.indexes.attention;
const UNRESOLVED = LEDGER_TABLE.indexes.unresolved;

/** Attributes a record loses when it leaves the reconciler's view. */
export const ATTENTION_ATTRIBUTES = [
  ATTENTION.partitionKey.name,
  ATTENTION.sortKey.name,
] as const satisfies readonly (keyof OperationRecord)[];

/** Attributes a terminal record loses: it is in no index and holds no lease. */
export const UNRESOLVED_ATTRIBUTES = [
  ATTENTION.partitionKey.name,
  ATTENTION.sortKey.name,
  UNRESOLVED.partitionKey.name,
  UNRESOLVED.sortKey.name,
] as const satisfies readonly (keyof OperationRecord)[];

/** Fields every terminal record gets: completion time and DynamoDB TTL (epoch seconds). */
export function terminalFields(
  record: Pick<OperationRecord, 'retention_seconds'>,
  now: number,
): Partial<OperationRecord> {
  return {
    completed_at: new Date(now).toISOString(),
    expires_at: Math.floor(now / 1000) + record.retention_seconds,
  };
}

/** Exponential backoff: `base * 2^(n-1)`, capped at one hour. */
export function backoffMs(base: number, n: number): number {
  return Math.min(base * 2 ** Math.max(0, n - 1), 3_600_000);
}

/** What besides the state decides when the reconciler looks at a record next. */
export interface AttentionExtra {
  leaseExpiresAt?: number | undefined;
  approvalDeadline?: number | undefined;
  attempt?: number;
  /**
   * An operation its caller executes (the contract, §14): nobody enqueues it, so `queued` (approved,
   * waiting for its caller) needs no attention, nor `failed_retryable` while attempts remain.
   */
  caller?: { attemptsLeft: boolean };
}

/**
 * The {@link AttentionExtra} of a record at `attempt`: its attempt, and whether its caller executes it
 * (and has attempts left).
 */
export function attentionExtra(
  record: Pick<OperationRecord, 'policy' | 'max_attempts'>,
  attempt: number,
): AttentionExtra {
  if (!isCallerExecuted(record)) return { attempt };
  return { attempt, caller: { attemptsLeft: attempt < record.max_attempts } };
}

/** When the reconciler should next look at a record entering `state`, or undefined for never. */
export function attentionFor(
  state: OperationState,
  now: number,
  config: LedgerConfig,
  extra: AttentionExtra,
): number | undefined {
  switch (state) {
    case 'pending':
      return extra.leaseExpiresAt;
    case 'queued':
      return extra.caller ? undefined : now + config.queuedStaleMs;
    case 'awaiting_approval':
      return extra.approvalDeadline;
    case 'failed_retryable':
      // A caller's: the reconciler only closes it once no attempt is left (the contract, §7).
      if (extra.caller) return extra.caller.attemptsLeft ? undefined : now;
      return now + backoffMs(config.retryBaseMs, extra.attempt ?? 1);
    case 'uncertain':
      return now;
    default:
      return undefined;
  }
}
