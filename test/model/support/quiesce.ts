import { allShards, operationKey } from '../../../functions/contract/keys';
import type { OperationRecord } from '../../../functions/domain/operation';
import { isTerminal } from '../../../functions/domain/states';
import { newRequest } from '../../../functions/engine/ledger-deps';
import { reconcilePass } from '../../../functions/engine/reconcile';
import { submitOperation } from '../../../functions/engine/submit-operation';
import type { ModelProcess, World } from './world';
import { PRINCIPALS } from './world';

/** How the final drive ended. */
export interface Quiescence {
  /** Nothing left for the reconciler and no message left on the queue. */
  quiet: boolean;
  rounds: number;
}

/** Rounds of the final drive before a world that still moves counts as stuck. */
export const MAX_ROUNDS = 16;
/** Clock advance per round: past every lease, backoff and staleness limit of the model's settings. */
const ROUND_MS = 600_000;

async function anyAttention(proc: ModelProcess): Promise<boolean> {
  for (const shard of allShards(proc.deps.config.attentionShards)) {
    const page = await proc.deps.store.queryAttention(shard, Number.MAX_SAFE_INTEGER, 1);
    if (page.items.length > 0) return true;
  }
  return false;
}

/**
 * Drives a world to quiescence the way production would after the schedule's chaos: healthy worker
 * processes, the clock moving past leases and backoffs, a reconciler pass per round, operators
 * resolving what needs them (truthfully, for the operations the schedule says have an operator),
 * approvers approving what the schedule says they approve (the rest expires), and every queued
 * message delivered, possibly twice at once.
 */
export async function quiesce(world: World): Promise<Quiescence> {
  const workers = [world.newProcess(), world.newProcess()] as const;
  const people = world.newProcess();
  const open = new Set(world.ops);
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    await world.settle();
    world.now += ROUND_MS;
    try {
      const summary = await reconcilePass(workers[0].deps, newRequest(workers[0].deps));
      if ((summary.actions.error ?? 0) > 0)
        world.anomalies.push('a healthy reconciler pass had failing decisions');
    } catch (error) {
      world.expect(error, [], 'healthy reconciler pass');
    }
    for (const op of open) {
      const record = await people.deps.store.get(operationKey(op.tenant, op.operationId));
      if (record && isTerminal(record.state)) open.delete(op); // terminal records never change
      if (!record) continue;
      if (
        op.spec.finalOperator &&
        (record.state === 'uncertain' || record.state === 'needs_reconciliation')
      ) {
        // As the docs tell an operator: a record held because its tool no longer matches it
        // (`policy_changed`) is retried (`not_applied`) only once the tool matches again, or it comes
        // back; while it does not, a person who finds no effect resolves it `failed`.
        const held = record.state === 'needs_reconciliation' && record.error?.code === 'policy_changed';
        await world.resolve(people, op, held ? 'failed' : 'not_applied', record);
      }
      if (op.spec.finalApprove && record.state === 'awaiting_approval') {
        await world.decide(people, op, 'approve', record.arguments_digest);
      }
    }
    const messages = world.queue.messages.splice(0);
    const outcomes = await Promise.all(
      messages.map((message, i) => world.deliverMessage(workers[i % 2] as ModelProcess, message, {})),
    );
    messages.forEach((message, i) => {
      if (outcomes[i] === 'again') world.queue.messages.push(message);
    });
    // Paused workers resume once the world has moved on: after the reconciler and the retries acted.
    await world.releaseStalls(true);
    if (world.queue.messages.length === 0 && !(await anyAttention(workers[0]))) {
      await replayAll(world, workers[0]);
      return { quiet: true, rounds: round };
    }
  }
  return { quiet: false, rounds: MAX_ROUNDS };
}

/**
 * Every operation with a record is retried once more with its own arguments, from a warm process
 * (terminal cache) and from a cold one: terminal records must replay, nothing may run.
 */
async function replayAll(world: World, warm: ModelProcess): Promise<void> {
  const cold = world.newProcess();
  for (const op of world.ops) {
    const record = await cold.deps.store.get(operationKey(op.tenant, op.operationId));
    const variant = record ? op.variantOf(record.arguments_digest) : undefined;
    if (!record || variant === undefined || !isTerminal(record.state)) continue;
    for (const [proc, via] of [
      [warm, 'final-warm'],
      [cold, 'final-cold'],
    ] as const) {
      try {
        const req = newRequest(proc.deps);
        const out = await submitOperation(proc.deps, req, {
          tenant: op.tenant,
          principal: PRINCIPALS.agent,
          operationId: op.operationId,
          tool: op.toolName,
          arguments: op.args[variant],
          mode: 'sync',
        });
        // A read's answer (the tool is declared a read now, by an upstream that lies): a result the
        // read cache kept from when the tool was a read before answers before the ledger is asked, for
        // the tool's cache window (a documented limit, docs/tools.md). Not the record's answer: the
        // effect log still proves nothing ran.
        if (!('pk' in out.record)) {
          world.readRequests.add(req.requestId);
          continue;
        }
        world.see(
          op,
          via,
          out.kind,
          out.record as OperationRecord,
          'replayed' in out ? out.replayed : undefined,
        );
      } catch (error) {
        world.expect(error, [], `${via} replay of ${op.key}`);
      }
    }
  }
}
