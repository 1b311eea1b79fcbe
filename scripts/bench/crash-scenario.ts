import { IdempotencyPersistenceLayerError } from '@aws-lambda-powertools/idempotency';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { newRequest } from '../../functions/engine/ledger-deps';
import { reconcilePass } from '../../functions/engine/reconcile';
import type { SideSamples } from './ab-runner';
import { benchArguments } from './bench-tools';
import { addTally, type CallCounter, emptyTally } from './call-counter';
import type { BenchDynalite } from './dynalite-server';
import { benchLedger } from './ledger-side';
import { lambdaContext, powertoolsHandler } from './powertools-baseline';
import type { BenchEnv, ScenarioResult } from './scenarios';

/**
 * A worker dies between the effect and the commit; a retry comes after the lease (tool-ledger) or the
 * in-progress lock (Powertools) has expired. The crash is simulated by a client whose UpdateItem
 * never leaves the process, so the commit never lands, exactly as if the process had died.
 *
 * tool-ledger: the retry finds `pending` with an expired lease and answers 202 without running
 * anything; the reconciler asks the tool, which finds the effect, and records `succeeded`.
 * Powertools: the retry takes over the expired lock and runs the effect again.
 */
export async function crashThenRetry(env: BenchEnv, db: BenchDynalite): Promise<ScenarioResult> {
  const { tl, pt } = env;
  const tlCrashClient = crashingClient(db);
  const ptCrashClient = crashingClient(db);
  const ptCrashed = powertoolsHandler({
    client: ptCrashClient,
    tableName: pt.table,
    work: async (e) => ({ ok: true, effect: pt.effects.apply(e.operation_id) }),
  });
  const tlSide = samples();
  const ptSide = samples();
  const finalStates: Record<string, number> = {};
  const iterations = env.iterations(5);
  // Lease = the tool's timeout (10 s) + TOOL_LEDGER_LEASE_GRACE_MS (5 s); the retry comes after it.
  const pastLease = 10_000 + 5_000 + 1_000;

  for (let i = 0; i < iterations; i++) {
    const id = `crash-${i}`;
    const args = benchArguments(i);
    const order = i % 2 === 0 ? ['tl', 'pt'] : ['pt', 'tl'];
    for (const side of order) {
      if (side === 'tl') {
        const crashed = await benchLedger(tlCrashClient, tl.table, tl.tools).submit(id, 'bench.effect', args);
        if (crashed.kind !== 'accepted' || crashed.record.state !== 'pending') {
          throw new Error(
            `crash attempt: expected accepted pending, got ${crashed.kind} ${crashed.record.state}`,
          );
        }
        const retry = benchLedger(tl.client, tl.table, tl.tools);
        retry.advance(pastLease);
        tl.counter.take();
        const started = performance.now();
        const answer = await retry.submit(id, 'bench.effect', args);
        record(tlSide, performance.now() - started, tl.counter);
        if (answer.kind === 'completed' && !answer.replayed)
          throw new Error('tool-ledger ran the effect again');
        await reconcilePass(retry.deps, newRequest(retry.deps));
        const after = await retry.submit(id, 'bench.effect', args);
        const label = `${after.record.state}${after.record.reconciled ? ' (reconciled)' : ''}`;
        finalStates[label] = (finalStates[label] ?? 0) + 1;
      } else {
        const event = { operation_id: id, tool: 'bench.effect', arguments: { ...args } };
        try {
          await ptCrashed(event, lambdaContext(50));
          throw new Error('the Powertools commit was expected to fail');
        } catch (error) {
          if (!(error instanceof IdempotencyPersistenceLayerError)) throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 60));
        pt.counter.take();
        const started = performance.now();
        await pt.cold(event, lambdaContext(10_000));
        record(ptSide, performance.now() - started, pt.counter);
      }
    }
  }
  let tlMax = 0;
  let ptMax = 0;
  for (let i = 0; i < iterations; i++) {
    tlMax = Math.max(tlMax, tl.effects.of(`crash-${i}`));
    ptMax = Math.max(ptMax, pt.effects.of(`crash-${i}`));
  }
  return {
    title: 'crash after effect, retry after expiry',
    tl: tlSide,
    pt: ptSide,
    opsPerIteration: 1,
    effects: { tl: tlMax, pt: ptMax },
    targets: { effectsPerOperation: 1 },
    note:
      'latency and calls of the retry; tool-ledger answers 202 (pending, lease expired), then one ' +
      `reconciler pass: ${Object.entries(finalStates)
        .map(([s, n]) => `${s} ×${n}`)
        .join(', ')}; Powertools runs the effect again`,
  };
}

function samples(): SideSamples {
  return { latencies: [], dynamoMs: [], tally: emptyTally(), iterations: 0 };
}

function record(side: SideSamples, ms: number, counter: CallCounter): void {
  const tally = counter.take();
  side.latencies.push(ms);
  side.dynamoMs.push(tally.dynamoMs);
  side.iterations += 1;
  addTally(side.tally, tally);
}

/** A client whose UpdateItem never leaves the process: the worker died before its commit. */
function crashingClient(db: BenchDynalite): DynamoDBClient {
  const client = db.newClient({ maxAttempts: 1 });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName === 'UpdateItemCommand') {
        throw Object.assign(new Error('the process died before its commit'), {
          name: 'ProcessCrashed',
          $metadata: {},
        });
      }
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'benchCrash' },
  );
  return client;
}
