import { operationKey } from '../../../functions/contract/keys';
import type { OperationRecord } from '../../../functions/domain/operation';
import { isTerminal } from '../../../functions/domain/states';
import { LedgerStore } from '../../../functions/ledger/ledger-store';
import { CANARY_PREFIX, TENANTS } from './catalogue';
import { coverage } from './coverage';
import type { Quiescence } from './quiesce';
import type { SharedEnv, World } from './world';

/**
 * The guarantees of SPEC §2, §3 and §7, checked on a world after its schedule and the final drive.
 * Returns every violation found (empty: the schedule kept every guarantee):
 *
 * - no effect ran twice for any operation, and nothing ran for arguments that conflicted;
 * - an operation ends `succeeded` only if its effect ran exactly once, `failed_terminal` or
 *   `rejected` only if it never ran;
 * - every completed response and every replay equals the stored outcome;
 * - no operation lost: whoever got an answer (or a conflict) about an operation finds its record;
 * - every operation ends terminal or in `needs_reconciliation` (none pending, none stuck);
 * - attempts never exceed `max_attempts`;
 * - tenants never see each other's records or arguments;
 * - every attempt of one operation sends the same downstream key;
 * - no transition log line carries an argument or result value.
 */
export async function violations(env: SharedEnv, world: World, end: Quiescence): Promise<string[]> {
  const found: string[] = [...world.anomalies];
  const store = new LedgerStore({ client: env.admin, tableName: world.table });
  const finals = new Map<number, OperationRecord | undefined>();
  for (const op of world.ops) finals.set(op.index, await store.get(operationKey(op.tenant, op.operationId)));
  if (!end.quiet) {
    const states = world.ops.map((op) => `${op.key}=${finals.get(op.index)?.state ?? 'none'}`).join(' ');
    found.push(`the world did not quiesce after ${end.rounds} rounds: ${states}`);
  }
  for (const key of world.scripted.crossTenant)
    found.push(`${key}: a tool ran with another tenant's arguments`);
  for (const key of [...env.plainHook.crossTenant, ...env.idemHook.crossTenant]) {
    found.push(`webhook ${key}: a request carried another tenant's arguments`);
  }
  for (const op of world.ops) {
    // One reservation per operation here (no record expires): every attempt sends one downstream key.
    const keys = new Set([...env.plainHook.keysOf(op.key), ...env.idemHook.keysOf(op.key)]);
    if (keys.size > 1) found.push(`${op.key}: its attempts sent ${keys.size} different downstream keys`);
  }

  for (const op of world.ops) {
    // The same operation ID under the other tenant: absent, or that tenant's own record.
    const other = TENANTS.find((t) => t !== op.tenant) ?? '';
    const twin = await store.get(operationKey(other, op.operationId));
    const ownTwin = world.ops.some((o) => o.tenant === other && o.operationId === op.operationId);
    if (twin && (!ownTwin || twin.tenant !== other))
      found.push(`${op.key}: ${other} sees a record under the same ID`);

    const record = finals.get(op.index);
    const counts = await op.applied();
    const seen = world.seen.filter((s) => s.op === op.index);
    for (const s of seen) {
      const r = s.record;
      if (
        r.tenant !== op.tenant ||
        r.operation_id !== op.operationId ||
        op.variantOf(r.arguments_digest) === undefined
      ) {
        found.push(`${op.key}: a ${s.via} response carried another operation's record (${r.pk})`);
      }
      if (r.attempt > r.max_attempts)
        found.push(`${op.key}: a ${s.via} response shows attempt ${r.attempt} > max`);
    }
    const conflicts = world.conflicts.filter((c) => c.op === op.index);
    if (!record) {
      if (seen.length > 0 || conflicts.length > 0)
        found.push(`${op.key}: lost (answers were given, no record)`);
      if (counts[0] + counts[1] > 0) found.push(`${op.key}: the effect ran (${counts}) with no record`);
      continue;
    }
    coverage.finalStates[record.state] = (coverage.finalStates[record.state] ?? 0) + 1;
    const byKind = coverage.byKind[op.spec.kind] ?? {};
    coverage.byKind[op.spec.kind] = byKind;
    for (const label of [
      record.state,
      record.reconciled ? 'reconciled' : '',
      record.resolved_by ? 'resolved' : '',
    ]) {
      if (label !== '') byKind[label] = (byKind[label] ?? 0) + 1;
    }
    if (record.late_outcome) coverage.lateOutcomes += 1;
    if (record.reconciled) coverage.reconciled += 1;
    if (record.resolved_by) coverage.resolved += 1;
    if (record.tenant !== op.tenant || record.pk !== operationKey(op.tenant, op.operationId).pk) {
      found.push(`${op.key}: the record belongs to ${record.tenant}`);
    }
    const variant = op.variantOf(record.arguments_digest);
    if (variant === undefined) {
      found.push(`${op.key}: the record holds arguments of neither variant`);
      continue;
    }
    const ran = counts[variant];
    if (counts[variant === 0 ? 1 : 0] > 0) found.push(`${op.key}: the conflicting arguments ran`);
    if (ran > 1) found.push(`${op.key}: the effect ran ${ran} times`);
    if (!isTerminal(record.state) && record.state !== 'needs_reconciliation') {
      found.push(`${op.key}: ended ${record.state} at attempt ${record.attempt}`);
    }
    if (record.state === 'succeeded' && ran !== 1)
      found.push(`${op.key}: succeeded, but the effect ran ${ran} times`);
    // A terminal failure never hides an effect (the contract, §7): attempts that ran out after one
    // may have applied go to an operator instead.
    if ((record.state === 'failed_terminal' || record.state === 'rejected') && ran !== 0) {
      found.push(`${op.key}: ${record.state}, but the effect ran ${ran} time(s)`);
    }
    if (record.attempt > record.max_attempts) {
      found.push(`${op.key}: attempt ${record.attempt} > max_attempts ${record.max_attempts}`);
    }
    for (const s of seen) {
      if (!isTerminal(s.record.state)) continue;
      const same =
        s.record.state === record.state &&
        s.record.result === record.result &&
        s.record.attempt === record.attempt &&
        JSON.stringify(s.record.error ?? null) === JSON.stringify(record.error ?? null);
      if (!same) {
        found.push(
          `${op.key}: a ${s.via} answer (${s.record.state}) differs from the stored outcome (${record.state})`,
        );
      }
      if (s.via.startsWith('final') && (s.kind !== 'completed' || s.replayed !== true)) {
        found.push(`${op.key}: the ${s.via} retry of a terminal operation was not a replay (${s.kind})`);
      }
    }
    for (const c of conflicts) {
      if (c.variant === variant)
        found.push(`${op.key}: a retry with the operation's own arguments was a conflict`);
    }
  }
  if (JSON.stringify(world.logs).includes(CANARY_PREFIX)) {
    found.push('a transition log line carries an argument or result value');
  }
  return found;
}
