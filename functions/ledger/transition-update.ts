import { LEDGER_TABLE } from '../contract/table';
import type { OperationRecord } from '../domain/operation';
import type { PayloadRef } from '../domain/payload';
import { assertTransitions } from '../domain/states';
import type { TransitionWrite } from '../engine/operation-store';
import { historyText, inlinePayload, refText } from './record-item';

/** One transition as DynamoDB's UpdateItem takes it, and the record it leaves when it lands. */
export interface TransitionUpdate {
  /** `SET … [REMOVE …]`. */
  update: string;
  /** The write's condition: the record is in the state it was read in and is what the transition expects. */
  condition: string;
  names: Record<string, string>;
  /** Plain values, marshalled by the store. */
  values: Record<string, unknown>;
  /** `record` with the write applied: the record as it is once the write lands (see LedgerStore.transition). */
  next: OperationRecord;
}

/**
 * Builds the UpdateItem of a named transition on `record`, the record as its caller read it: the new
 * state and fields (`SET`), the fields that go (`REMOVE`), a history entry appended (as its JSON text,
 * functions/ledger/record-item.ts), and the condition that the record is in the state it was read in
 * (exactly that one; a missing item fails it, since a missing attribute equals nothing) and, where
 * given, at the expected attempt, lease owner, digest, lease expiry, reconcile checks, attention time,
 * reservation and approval deadline. A result is written brotli-compressed when that is smaller
 * (`compress`, functions/domain/payload.ts); `next` holds its text. Throws, before anything is built, when the write does not expect the state the
 * record was read in, or when the state machine (functions/domain/states.ts) does not allow the move
 * the write names.
 *
 * Each attribute name gets one `#…` however often it is used, and an equal string, number or boolean
 * one `:…` (a commit's outcome code and state, its lease owner and `outcome_by`, its two timestamps):
 * a shorter request for the SDK to serialize and for DynamoDB to validate. Names always go through
 * placeholders, so no attribute can clash with a reserved word.
 *
 * @example
 * ```ts
 * transitionUpdate(queuedRecord, { transition: 'claim', expect: { states: ['queued'], attempt: 0 }, to: 'pending', set: { attempt: 1 } });
 * // { update: 'SET #0=:0,#1=:1', condition: '#1=:2 AND #0=:3', … }
 * ```
 */
export function transitionUpdate(
  record: OperationRecord,
  write: TransitionWrite,
  compress = true,
): TransitionUpdate {
  const expect = write.expect;
  if (expect.states.length !== 1 || expect.states[0] !== record.state) {
    // The new record is built from the one read: the write must be conditioned on its state.
    throw new Error(
      `a transition must expect the state it read (${record.state}), not ${expect.states.join(', ')}`,
    );
  }
  assertTransitions(write.transition, expect.states, write.to);
  // Object.assign, not a spread: V8 gives a spread's copy the record's own shape, and the fields a
  // commit adds to it then cost microseconds each (~20 µs per transition measured, against ~1).
  const next = Object.assign({}, record) as unknown as Record<string, unknown>;
  const x = new Placeholders();
  for (const attr in write.set) {
    const value = write.set[attr as keyof OperationRecord];
    if (value !== undefined) {
      // A result is stored as the item stores it (compressed where smaller); the record keeps its text.
      // A reference is kept as its JSON text, as a reservation's item keeps it (record-item.ts).
      x.assign(
        attr,
        attr === 'result' && typeof value === 'string'
          ? inlinePayload(value, compress)
          : attr === 'result_ref' && typeof value === 'object'
            ? refText(value as PayloadRef)
            : value,
      );
      next[attr] = value;
    }
  }
  if (write.to !== undefined) {
    x.assign('state', write.to);
    next.state = write.to;
  }
  let update = x.update;
  if (write.history) {
    const history = x.name('history');
    // A record read with history has the attribute (no transition removes it): a plain append.
    const current = record.history?.length ? history : `if_not_exists(${history},${x.value([])})`;
    update +=
      `${update === '' ? 'SET ' : ','}${history}=` +
      `list_append(${current},${x.value([historyText(write.history)])})`;
    next.history = [...(record.history ?? []), write.history];
  }
  const remove = write.remove ?? [];
  for (let i = 0; i < remove.length; i++) {
    const attr = remove[i] as string;
    update += `${i === 0 ? ' REMOVE ' : ','}${x.name(attr)}`;
    delete next[attr];
  }

  let condition = `${x.name('state')}=${x.value(record.state)}`;
  condition += x.equal('attempt', expect.attempt);
  condition += x.equal('lease_owner', expect.leaseOwner);
  condition += x.equal('arguments_digest', expect.digest);
  if (expect.leaseExpiredBefore !== undefined) {
    condition += ` AND ${x.name('lease_expires_at')}<${x.value(expect.leaseExpiredBefore)}`;
  }
  if (expect.leaseLiveAfter !== undefined) {
    condition += ` AND ${x.name('lease_expires_at')}>${x.value(expect.leaseLiveAfter)}`;
  }
  if (expect.reconcileChecks !== undefined) {
    const checks = x.name('reconcile_checks');
    const value = x.value(expect.reconcileChecks);
    condition +=
      expect.reconcileChecks === 0
        ? ` AND (attribute_not_exists(${checks}) OR ${checks}=${value})`
        : ` AND ${checks}=${value}`;
  }
  condition += x.equal(LEDGER_TABLE.indexes.attention.sortKey.name, expect.attentionAt);
  condition += x.equal('reservation_id', expect.reservationId);

  if (expect.approvalDeadlineAfter !== undefined) {
    condition += ` AND ${x.name('approval_deadline')}>${x.value(expect.approvalDeadlineAfter)}`;
  }

  return {
    update: update.trim(),
    condition,
    names: x.names,
    values: x.values,
    next: next as unknown as OperationRecord,
  };
}

/**
 * The placeholders of one request's expressions: one per attribute name, one per equal scalar value,
 * each spelled with as few characters as it can (`#0`…`#z`, `:0`…`:z`, then two). The expressions
 * leave out the optional spaces too (`#0=:0,#1=:1`): DynamoDB, and dynalite, whose expression parser
 * costs by the token and the character, read every one of them.
 */
class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  /** The `SET` clause so far (`''` before the first assignment). */
  update = '';
  private readonly byName = new Map<string, string>();
  private readonly byValue = new Map<unknown, string>();
  private count = 0;

  /** The placeholder of an attribute name. */
  name(attr: string): string {
    let ref = this.byName.get(attr);
    if (ref === undefined) {
      ref = `#${this.byName.size.toString(36)}`;
      this.byName.set(attr, ref);
      this.names[ref] = attr;
    }
    return ref;
  }

  /** The placeholder of a value; lists and maps always get their own. */
  value(value: unknown): string {
    const scalar = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    let ref = scalar ? this.byValue.get(value) : undefined;
    if (ref === undefined) {
      ref = `:${(this.count++).toString(36)}`;
      this.values[ref] = value;
      if (scalar) this.byValue.set(value, ref);
    }
    return ref;
  }

  /** Adds `attr = value` to the `SET` clause. */
  assign(attr: string, value: unknown): void {
    this.update += `${this.update === '' ? 'SET ' : ','}${this.name(attr)}=${this.value(value)}`;
  }

  /** ` AND attr = value`, or nothing when no value is expected. */
  equal(attr: string, value: unknown): string {
    return value === undefined ? '' : ` AND ${this.name(attr)}=${this.value(value)}`;
  }
}
