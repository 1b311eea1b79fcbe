import { LEDGER_TABLE } from '../contract/table';
import type { OperationRecord } from '../domain/operation';
import { assertTransitions } from '../domain/states';
import type { TransitionWrite } from '../engine/operation-store';

/** One transition as DynamoDB's UpdateItem takes it. */
export interface TransitionUpdate {
  /** `SET … [REMOVE …]`. */
  update: string;
  /** The write's condition: the record exists and is what the transition expects. */
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * Builds the UpdateItem of a named transition: the new state and fields (`SET`), the fields that go
 * (`REMOVE`), a history entry appended, and the condition that the record exists, is in one of the
 * expected states and, where given, at the expected attempt, lease owner, digest, lease expiry,
 * reconcile checks, attention time, reservation and approval deadline. Throws, before anything is sent, when the state
 * machine (functions/domain/states.ts) does not allow the move the write names.
 *
 * @example
 * ```ts
 * transitionUpdate({ transition: 'claim', expect: { states: ['queued'], attempt: 0 }, to: 'pending', set: { attempt: 1 } });
 * // { update: 'SET #s0 = :s0, #s1 = :s1', condition: 'attribute_exists(pk) AND #state IN (:from0) AND #attempt = :attempt', … }
 * ```
 */
export function transitionUpdate(write: TransitionWrite): TransitionUpdate {
  assertTransitions(write.transition, write.expect.states, write.to);
  const names: Record<string, string> = { '#state': 'state' };
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const set: Partial<OperationRecord> = { ...write.set };
  if (write.to !== undefined) set.state = write.to;
  let n = 0;
  for (const [attr, value] of Object.entries(set)) {
    if (value === undefined) continue;
    const nk = `#s${n}`;
    const vk = `:s${n}`;
    n++;
    names[nk] = attr;
    values[vk] = value;
    sets.push(`${nk} = ${vk}`);
  }
  if (write.history) {
    names['#history'] = 'history';
    values[':h'] = [write.history];
    values[':empty'] = [];
    sets.push('#history = list_append(if_not_exists(#history, :empty), :h)');
  }
  const removes = (write.remove ?? []).map((attr, i) => {
    names[`#r${i}`] = attr;
    return `#r${i}`;
  });

  const conditions: string[] = [`attribute_exists(${LEDGER_TABLE.partitionKey.name})`];
  const stateKeys = write.expect.states.map((s, i) => {
    values[`:from${i}`] = s;
    return `:from${i}`;
  });
  conditions.push(`#state IN (${stateKeys.join(', ')})`);
  if (write.expect.attempt !== undefined) {
    names['#attempt'] = 'attempt';
    values[':attempt'] = write.expect.attempt;
    conditions.push('#attempt = :attempt');
  }
  if (write.expect.leaseOwner !== undefined) {
    names['#lease_owner'] = 'lease_owner';
    values[':lease_owner'] = write.expect.leaseOwner;
    conditions.push('#lease_owner = :lease_owner');
  }
  if (write.expect.digest !== undefined) {
    names['#digest'] = 'arguments_digest';
    values[':digest'] = write.expect.digest;
    conditions.push('#digest = :digest');
  }
  if (write.expect.leaseExpiredBefore !== undefined) {
    names['#lease_expires_at'] = 'lease_expires_at';
    values[':lease_limit'] = write.expect.leaseExpiredBefore;
    conditions.push('#lease_expires_at < :lease_limit');
  }
  if (write.expect.reconcileChecks !== undefined) {
    names['#checks'] = 'reconcile_checks';
    values[':checks'] = write.expect.reconcileChecks;
    conditions.push(
      write.expect.reconcileChecks === 0
        ? '(attribute_not_exists(#checks) OR #checks = :checks)'
        : '#checks = :checks',
    );
  }

  if (write.expect.attentionAt !== undefined) {
    names['#attention_at'] = LEDGER_TABLE.indexes.attention.sortKey.name;
    values[':attention_at'] = write.expect.attentionAt;
    conditions.push('#attention_at = :attention_at');
  }

  if (write.expect.reservationId !== undefined) {
    names['#reservation_id'] = 'reservation_id';
    values[':reservation_id'] = write.expect.reservationId;
    conditions.push('#reservation_id = :reservation_id');
  }

  if (write.expect.approvalDeadlineAfter !== undefined) {
    names['#approval_deadline'] = 'approval_deadline';
    values[':approval_now'] = write.expect.approvalDeadlineAfter;
    conditions.push('#approval_deadline > :approval_now');
  }

  let update = sets.length > 0 ? `SET ${sets.join(', ')}` : '';
  if (removes.length > 0) update += ` REMOVE ${removes.join(', ')}`;
  return { update: update.trim(), condition: conditions.join(' AND '), names, values };
}
