import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bearerToken,
  ClaimLostError,
  IdempotencyConflictError,
  NotAppliedError,
  OutcomeNotRecordedError,
  operationIdFor,
  type ReconcileVerdict,
  type RunContext,
  type RunInput,
  ToolLedgerClient,
  type ToolLedgerClientOptions,
  ToolLedgerRequestError,
} from '../../client/index';
import { operationKey } from '../../functions/contract/keys';
import { TerminalToolError as ServerTerminalToolError } from '../../functions/domain/tool';
import { deferred, manualClock } from '../client/support/manual-clock';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `ledger.run` against the real ledger: the API handler on dynalite, over HTTP, with the ledger's clock
 * and the reconciler in the test's hands (a lease expires when the test advances the ledger's clock;
 * the reconciler runs one pass when the test asks). Faults are injected in `fetch` only: a lost answer,
 * a duplicated delivery, a crash before a request is sent. Each effect lands in an in-test target that
 * counts effects by downstream key, so "one effect" is counted where the effect happens.
 */

const db = useDynalite();
let served: ServedLedger;
let faults: FaultyFetch;
let run = 0;

beforeEach(async () => {
  served = await serveLedger(db, [new ScriptedTool('test.effect').tool]);
  faults = new FaultyFetch();
  run++;
});
afterEach(async () => {
  await served.close();
});

/** A target with its own record of effects, looked up by downstream key (what `reconcile` asks). */
class Target {
  readonly effects: { downstreamKey: string; attempt: number; value: unknown }[] = [];
  apply(ctx: RunContext, value: unknown): { id: number } {
    this.effects.push({ downstreamKey: ctx.downstreamKey, attempt: ctx.attempt, value });
    return { id: this.effects.length };
  }
  find(downstreamKey: string) {
    return this.effects.find((e) => e.downstreamKey === downstreamKey);
  }
  /** `reconcile` as a caller writes it: look the effect up by the downstream key. */
  readonly reconcile = (ctx: RunContext): ReconcileVerdict => {
    const found = this.find(ctx.downstreamKey);
    return found
      ? { status: 'applied', result: { id: this.effects.indexOf(found) + 1 } }
      : { status: 'not_applied' };
  };
}

function client(options: Partial<ToolLedgerClientOptions> & { token?: string } = {}) {
  const { token = 'agent-a', ...rest } = options;
  return new ToolLedgerClient({
    endpoint: served.endpoint,
    signer: bearerToken(token),
    fetch: faults.fetch,
    backoff: { baseMs: 5, maxMs: 20 },
    pollBackoff: { baseMs: 5, maxMs: 20 },
    deadlineMs: 30_000,
    ...rest,
  });
}

function id(step = 0) {
  return operationIdFor({ agentRunId: `caller-e2e-${run}`, step, callIndex: 0 });
}

function input(target: Target, extra: Partial<RunInput> = {}): RunInput {
  return {
    operationId: id(),
    tool: 'billing.refund',
    arguments: { invoice: 'in_123', cents: 500 },
    execute: (ctx) => target.apply(ctx, 'refund'),
    ...extra,
  };
}

async function stored(operationId: string) {
  const record = await served.ledger.store.get(operationKey('acme', operationId));
  if (!record) throw new Error(`no record for ${operationId}`);
  return record;
}

describe('ledger.run against the ledger', () => {
  it('runs the effect once, records it, and replays it without calling execute', async () => {
    const target = new Target();
    const first = await client().run(input(target));
    expect(first).toMatchObject({ outcome: 'succeeded', replayed: false, executions: 1, result: { id: 1 } });
    expect(first.operation).toMatchObject({ state: 'succeeded', attempt: 1, execution: 'caller' });

    const again = await client().run(input(target));
    expect(again).toMatchObject({ outcome: 'succeeded', replayed: true, executions: 0, result: { id: 1 } });
    expect(target.effects).toHaveLength(1);
    expect(faults.bodies('claim').every((b) => b.execution === 'caller')).toBe(true);
  });

  it('the same ID with other arguments is a conflict: nothing runs', async () => {
    const target = new Target();
    await client().run(input(target));
    const error = await client()
      .run(input(target, { arguments: { invoice: 'in_123', cents: 900 } }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(target.effects).toHaveLength(1);
  });

  it('a lost claim answer is retried with the same claim_id and gets the same claim: one execution', async () => {
    const target = new Target();
    faults.inject('claim', 'lose_answer');
    const out = await client().run(input(target));
    const claims = faults.bodies('claim');
    expect(claims).toHaveLength(2);
    expect(claims[1]!.claim_id).toBe(claims[0]!.claim_id);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(target.effects).toHaveLength(1);
    expect((await stored(id())).attempt).toBe(1);
  });

  it('a duplicated claim delivery hands both copies the same claim: one execution', async () => {
    const target = new Target();
    faults.inject('claim', 'duplicate');
    const out = await client().run(input(target));
    expect(faults.bodies('claim')).toHaveLength(2);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(target.effects).toHaveLength(1);
  });

  it('a lost outcome answer is retried with the same token and lands once', async () => {
    const target = new Target();
    faults.inject('outcome', 'lose_answer');
    const out = await client().run(input(target));
    const outcomes = faults.bodies('outcome');
    expect(outcomes).toHaveLength(2);
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(out).toMatchObject({ outcome: 'succeeded', result: { id: 1 } });
    const record = await stored(id());
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(record.history?.filter((h) => h.to === 'succeeded')).toHaveLength(1);
    expect(target.effects).toHaveLength(1);
  });

  it('a duplicated outcome delivery is answered with the same record', async () => {
    const target = new Target();
    faults.inject('outcome', 'duplicate');
    const out = await client().run(input(target));
    expect(faults.bodies('outcome')).toHaveLength(2);
    expect(out).toMatchObject({ outcome: 'succeeded', result: { id: 1 } });
  });

  it("classifies the server package's TerminalToolError as failed_terminal, and replays it", async () => {
    const target = new Target();
    const failing = input(target, {
      execute: () => {
        throw new ServerTerminalToolError('card_declined', 'the card was declined');
      },
    });
    const out = await client().run(failing);
    expect(out).toMatchObject({ outcome: 'failed', executions: 1 });
    expect(out.operation.error).toMatchObject({ code: 'card_declined', message: 'the card was declined' });
    const again = await client().run(input(target));
    expect(again).toMatchObject({ outcome: 'failed', replayed: true, executions: 0 });
    expect(target.effects).toHaveLength(0);
  });

  it('NotAppliedError: the next attempt runs with the same downstream key', async () => {
    const target = new Target();
    const contexts: RunContext[] = [];
    const out = await client().run(
      input(target, {
        execute: (ctx) => {
          contexts.push(ctx);
          if (ctx.attempt === 1)
            throw new NotAppliedError('connect_refused', 'the target refused the connection');
          return target.apply(ctx, 'refund');
        },
      }),
    );
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 2 });
    expect(out.operation.attempt).toBe(2);
    expect(contexts.map((c) => c.attempt)).toEqual([1, 2]);
    expect(contexts[1]!.downstreamKey).toBe(contexts[0]!.downstreamKey);
    expect(target.effects).toHaveLength(1);
  });

  it('a tool the deployment runs itself is refused before anything runs', async () => {
    const target = new Target();
    const error = await client()
      .run(input(target, { tool: 'test.effect' }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerRequestError);
    expect(error).toMatchObject({ code: 'tool_executed_by_ledger', status: 400 });
    expect(target.effects).toHaveLength(0);
    expect(await served.ledger.store.get(operationKey('acme', id()))).toBeUndefined();
  });

  it('a claim held elsewhere is reported, never executed', async () => {
    const target = new Target();
    const gate = deferred();
    const holder = client().run(
      input(target, {
        execute: async (ctx) => {
          await gate.promise;
          return target.apply(ctx, 'refund');
        },
      }),
    );
    await faults.answered('claim', 1);
    const second = new Target();
    const out = await client().run(input(second));
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 0 });
    expect(out.operation.state).toBe('pending');
    expect(second.effects).toHaveLength(0);
    gate.resolve();
    expect(await holder).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(target.effects).toHaveLength(1);
  });
});

describe('ledger.run: the lease', () => {
  it("heartbeats keep a long effect's claim past its first lease, through a reconciler pass", async () => {
    const clock = manualClock();
    const target = new Target();
    const gate = deferred();
    const running = client({ clock }).run(
      input(target, {
        leaseSeconds: 3,
        execute: async (ctx) => {
          await gate.promise;
          return target.apply(ctx, 'refund');
        },
      }),
    );
    await clock.sleepsStarted(1); // claimed; the heartbeat timer runs
    served.ledger.advance(2_000);
    clock.advance(1_000);
    await faults.answered('lease', 1);
    served.ledger.advance(2_000); // past the first lease's end, within the extended one
    await served.reconcile();
    expect((await stored(id())).state).toBe('pending');
    gate.resolve();
    expect(await running).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(target.effects).toHaveLength(1);
  });

  it('a claim lost to the reconciler aborts ctx.signal at the next heartbeat; the effect never happens', async () => {
    const clock = manualClock();
    const target = new Target();
    let reason: unknown;
    const running = client({ clock }).run(
      input(target, {
        leaseSeconds: 3,
        execute: (ctx) =>
          new Promise((resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              reject(ctx.signal.reason);
            });
            if (ctx.signal.aborted) resolve(undefined);
          }),
      }),
    );
    await clock.sleepsStarted(1);
    served.ledger.advance(4_000); // the lease ends with no heartbeat
    await served.reconcile();
    expect((await stored(id())).state).toBe('uncertain');
    clock.advance(1_000);
    const out = await running;
    expect(reason).toBeInstanceOf(ClaimLostError);
    expect(reason).toMatchObject({ code: 'claim_lost', attempt: 1 });
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 1 });
    expect(out.operation.state).toBe('uncertain');
    expect(target.effects).toHaveLength(0);
  });
});

describe('ledger.run: a crash between the effect and its outcome', () => {
  /** Runs the effect, then dies before the outcome is sent; the lease then runs out and a pass marks it uncertain. */
  async function crashAfterEffect(target: Target, options: { effect: boolean }) {
    faults.inject('outcome', 'crash');
    const error = await client()
      .run(
        input(target, {
          leaseSeconds: 5,
          execute: (ctx) => (options.effect ? target.apply(ctx, 'refund') : { id: 0 }),
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeNotRecordedError);
    expect((await stored(id())).state).toBe('pending');
    served.ledger.advance(6_000);
    await served.reconcile();
    expect((await stored(id())).state).toBe('uncertain');
  }

  it('the next run calls reconcile, which finds the effect: succeeded, one effect, execute not called', async () => {
    const target = new Target();
    await crashAfterEffect(target, { effect: true });
    let executed = 0;
    const out = await client().run(
      input(target, {
        execute: () => {
          executed++;
          return { id: 99 };
        },
        reconcile: target.reconcile,
      }),
    );
    expect(executed).toBe(0);
    expect(out).toMatchObject({ outcome: 'succeeded', replayed: true, executions: 0, result: { id: 1 } });
    expect(out.operation).toMatchObject({ reconciled: true, attempt: 1 });
    expect(faults.bodies('reconciliation')).toEqual([
      { attempt: 1, verdict: 'applied', downstream_key: target.effects[0]!.downstreamKey, result: { id: 1 } },
    ]);
    expect(target.effects).toHaveLength(1);
    expect(await client().run(input(target))).toMatchObject({ replayed: true, result: { id: 1 } });
  });

  it('reconcile finds no effect: not_applied, and the next attempt runs with the same downstream key', async () => {
    const target = new Target();
    await crashAfterEffect(target, { effect: false });
    const before = (await client().get(id())).downstream_key;
    const out = await client().run(input(target, { reconcile: target.reconcile }));
    expect(faults.bodies('reconciliation')).toMatchObject([{ attempt: 1, verdict: 'not_applied' }]);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1, replayed: false });
    expect(out.operation.attempt).toBe(2);
    expect(target.effects).toEqual([{ downstreamKey: before, attempt: 2, value: 'refund' }]);
  });

  it('without reconcile, the uncertain operation is reported and never executed again', async () => {
    const target = new Target();
    await crashAfterEffect(target, { effect: true });
    const out = await client().run(input(target));
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 0 });
    expect(out.operation.state).toBe('uncertain');
    expect(target.effects).toHaveLength(1);
  });

  it('downstreamIdempotent, with wait: the reconciler lets it retry, and the wait claims the next attempt', async () => {
    const target = new Target();
    const running = client().run(
      input(target, {
        downstreamIdempotent: true,
        wait: { timeoutMs: 60_000 },
        execute: (ctx) => {
          if (ctx.attempt === 1) throw new Error('reset after sending');
          return target.apply(ctx, 'refund');
        },
      }),
    );
    await faults.answered('get', 1); // its outcome was uncertain; it is waiting for the state to move
    await served.reconcile();
    const out = await running;
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 2 });
    expect(out.operation.attempt).toBe(2);
    expect(target.effects).toHaveLength(1);
  });
});

describe('ledger.run: approval', () => {
  it('waits for approval, then claims and runs; the operation is never put on the work queue', async () => {
    const target = new Target();
    const running = client().run(input(target, { requiresApproval: true, wait: { timeoutMs: 60_000 } }));
    await faults.answered('get', 1);
    expect(target.effects).toHaveLength(0);
    const approver = new ToolLedgerClient({ endpoint: served.endpoint, signer: bearerToken('approver-a') });
    const pending = await approver.get(id(), { includeArguments: true });
    expect(pending.state).toBe('awaiting_approval');
    await approver.approve(id(), pending.arguments_digest);
    const out = await running;
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1, replayed: false });
    expect(target.effects).toHaveLength(1);
    expect(served.ledger.queue.messages).toHaveLength(0);
  });

  it('without wait, reports awaiting_approval and runs nothing', async () => {
    const target = new Target();
    const out = await client().run(input(target, { requiresApproval: true }));
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 0 });
    expect(out.operation.state).toBe('awaiting_approval');
    expect(out.model.envelope.note).toMatch(/waiting for human approval/);
    expect(target.effects).toHaveLength(0);
  });
});

describe('what the ledger cannot promise', () => {
  it('a caller that keeps running after its lease ran out can cause a second effect; its outcome is kept as late', async () => {
    // The first caller's effect is slow and it sends no heartbeat (its clock never moves); its lease
    // runs out, a second caller's reconcile finds nothing yet and says not_applied, and runs attempt 2.
    const target = new Target();
    const gate = deferred();
    const slow = client({ clock: manualClock() }).run(
      input(target, {
        leaseSeconds: 3,
        execute: async (ctx) => {
          await gate.promise; // ignores ctx.signal
          return target.apply(ctx, 'refund');
        },
      }),
    );
    await faults.answered('claim', 1);
    served.ledger.advance(4_000);
    await served.reconcile();
    const second = await client().run(input(target, { reconcile: target.reconcile }));
    expect(second).toMatchObject({ outcome: 'succeeded', executions: 1 });
    gate.resolve();
    const first = await slow;
    expect(first.operation).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(target.effects.map((e) => e.attempt)).toEqual([2, 1]);
    expect(target.effects[0]!.downstreamKey).toBe(target.effects[1]!.downstreamKey);
    expect((await stored(id())).late_outcome).toMatchObject({ attempt: 1, state: 'succeeded' });
  });
});
