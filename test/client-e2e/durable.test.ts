import {
  type DurableContext,
  type DurableLambdaHandler,
  OperationAction,
  type OperationUpdate,
  type StepConfig,
  StepSemantics,
  withDurableExecution,
} from '@aws/durable-execution-sdk-js';
import { LocalDurableTestRunner, WaitingOperationStatus } from '@aws/durable-execution-sdk-js-testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type DurableLedgerOptions,
  type LedgerStepCall,
  type LedgerStepContext,
  withLedger,
} from '../../client/durable-entry';
import {
  bearerToken,
  operationIdFrom,
  type ReconcileVerdict,
  type RunInput,
  type RunOutcome,
  ToolLedgerClient,
} from '../../client/index';
import { operationKey } from '../../functions/contract/keys';
import { useDynalite } from '../support/dynalite';
import { CrashingLambda } from './support/crashing-lambda';
import { FaultyFetch, type ServedLedger, serveLedger } from './support/served-ledger';

/**
 * `@tool-ledger/client/durable` against the AWS durable execution SDK's own local runner
 * (`LocalDurableTestRunner`: the handler in-process, the SDK's checkpoint server in a worker) and the
 * real ledger (the API handler on dynalite over HTTP, its clock and reconciler in the test's hands).
 * Invocations die where the test says (`CrashingLambda`: a step's fetch to the ledger, or a checkpoint
 * the SDK sends), and the next invocation of the same execution replays from the checkpoints, as the
 * Lambda service does. Every effect lands in an in-test target that counts effects by downstream key.
 */

const db = useDynalite();
let served: ServedLedger;
let faults: FaultyFetch;
let target: Target;

beforeAll(() => LocalDurableTestRunner.setupTestEnvironment({ skipTime: false }));
afterAll(() => LocalDurableTestRunner.teardownTestEnvironment());
beforeEach(async () => {
  served = await serveLedger(db);
  faults = new FaultyFetch();
  target = new Target();
});
afterEach(async () => {
  await served.close();
});

interface Order {
  id: string;
  cents: number;
}

/** The payment service the step charges: it records each charge under the request's idempotency key. */
class Target {
  readonly effects: { downstreamKey: string; cents: number }[] = [];
  /** Every call of the step's `execute`, whether or not it charged. */
  executions = 0;
  charge(ctx: LedgerStepContext, cents: number): { charge: number; cents: number } {
    this.effects.push({ downstreamKey: ctx.downstreamKey, cents });
    return { charge: this.effects.length, cents };
  }
  readonly reconcile = (ctx: {
    downstreamKey: string;
  }): ReconcileVerdict<{ charge: number; cents: number }> => {
    const index = this.effects.findIndex((e) => e.downstreamKey === ctx.downstreamKey);
    const found = this.effects[index];
    return found
      ? { status: 'applied', result: { charge: index + 1, cents: found.cents } }
      : { status: 'not_applied' };
  };
}

/** The ledger client the durable function holds, with every `run` outcome kept for the test to read. */
function ledgerClient(fetchImpl: typeof fetch = faults.fetch) {
  const client = new ToolLedgerClient({
    endpoint: served.endpoint,
    signer: bearerToken('agent-a'),
    fetch: fetchImpl,
    backoff: { baseMs: 5, maxMs: 20 },
    pollBackoff: { baseMs: 5, maxMs: 20 },
    deadlineMs: 30_000,
  });
  const outcomes: RunOutcome[] = [];
  const watchers: { count: number; resolve: (outcome: RunOutcome) => void }[] = [];
  return {
    outcomes,
    run: async <T>(input: RunInput<T>) => {
      const outcome = await client.run(input);
      outcomes.push(outcome);
      for (const w of watchers.filter((w) => outcomes.length >= w.count)) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve(outcomes[w.count - 1] as RunOutcome);
      }
      return outcome;
    },
    /** Resolves with the `count`th outcome once `run` has returned it. */
    nth(count: number): Promise<RunOutcome> {
      const seen = outcomes[count - 1];
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => watchers.push({ count, resolve }));
    },
  };
}

/** A checkpoint update of the named step that the SDK sends when the step returned. */
function stepSucceeded(name: string) {
  return (update: OperationUpdate) => update.Name === name && update.Action === OperationAction.SUCCEED;
}

/** Retries a not-settled step one second later (the SDK's own schedule), up to 30 attempts. */
const PROMPT_RETRY: StepConfig<unknown>['retryStrategy'] = (_error, attempts) => ({
  shouldRetry: attempts < 30,
  delay: { seconds: 1 },
});

/** The durable function under test: one ledger step that charges the order. */
function chargeOrder(
  ledger: ReturnType<typeof ledgerClient>,
  options: {
    ledgerOptions?: DurableLedgerOptions;
    call?: (order: Order) => Partial<LedgerStepCall<{ charge: number; cents: number }>>;
    config?: StepConfig<{ charge: number; cents: number }>;
    afterCharge?: (context: DurableContext) => Promise<unknown>;
  } = {},
): DurableLambdaHandler {
  return withDurableExecution(async (order: Order, context: DurableContext) => {
    const steps = withLedger(ledger, context, options.ledgerOptions);
    const charged = await steps.step(
      'charge-card',
      {
        tool: 'payments.charge',
        arguments: { order: order.id, cents: order.cents },
        ...options.call?.(order),
      },
      (ctx) => {
        target.executions++;
        return target.charge(ctx, order.cents);
      },
      options.config,
    );
    const after = await options.afterCharge?.(context);
    return { charged, after, arn: context.executionContext.durableExecutionArn };
  });
}

async function recordOf(operationId: string) {
  const record = await served.ledger.store.get(operationKey('acme', operationId));
  if (!record) throw new Error(`no record for ${operationId}`);
  return record;
}

describe('ledger steps in a durable execution', () => {
  it('runs the effect once under the operation ID <execution ARN>/<step name> and returns the stored result', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({ handlerFunction: chargeOrder(ledger) });
    const execution = await runner.run({ payload: { id: 'o-1', cents: 500 } });
    expect(execution.getStatus()).toBe('SUCCEEDED');
    const result = execution.getResult() as { charged: unknown; arn: string };
    expect(result.charged).toEqual({ charge: 1, cents: 500 });
    expect(target.effects).toHaveLength(1);
    const record = await recordOf(operationIdFrom([result.arn, 'charge-card']));
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1, tool: 'payments.charge' });
    expect(ledger.outcomes).toMatchObject([{ replayed: false, executions: 1 }]);
  });

  it('an execution interrupted inside the step after the ledger recorded the effect: the resumed step replays it, one effect', async () => {
    const ledger = ledgerClient();
    const lambda = new CrashingLambda(chargeOrder(ledger)).crashOnCheckpoint(stepSucceeded('charge-card'));
    const runner = new LocalDurableTestRunner({ handlerFunction: lambda.handler });
    const execution = await runner.run({ payload: { id: 'o-2', cents: 700 } });
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(lambda.invocations).toBe(2);
    expect(target.executions).toBe(1);
    expect(target.effects).toHaveLength(1);
    expect(ledger.outcomes.map((o) => [o.replayed, o.executions])).toEqual([
      [false, 1],
      [true, 0],
    ]);
    expect(ledger.outcomes[1]?.model.envelope.note).toMatch(/already been performed/);
    expect((execution.getResult() as { charged: unknown }).charged).toEqual({ charge: 1, cents: 700 });
  });

  it('a step the SDK already checkpointed is replayed by the SDK in later invocations: the ledger is not asked again', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({
      handlerFunction: chargeOrder(ledger, {
        afterCharge: (context) => context.waitForCallback('confirm-shipping', async () => {}),
      }),
    });
    const running = runner.run({ payload: { id: 'o-3', cents: 300 } });
    const confirm = runner.getOperation('confirm-shipping');
    await confirm.waitForData(WaitingOperationStatus.SUBMITTED);
    await confirm.sendCallbackSuccess(JSON.stringify('shipped'));
    const execution = await running;
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(execution.getInvocations().length).toBe(2);
    expect(target.executions).toBe(1);
    expect(faults.bodies('claim')).toHaveLength(1);
    expect(ledger.outcomes).toHaveLength(1);
  });

  it('a crash between the effect and the ledger commit is settled by reconcile in the resumed invocation', async () => {
    let lambda: CrashingLambda | undefined;
    // The invocation dies as it sends the outcome: the effect happened, the ledger never heard of it.
    const dying: typeof fetch = (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname.endsWith('/outcome') && lambda) return lambda.crash();
      return faults.fetch(input, init);
    };
    const ledger = ledgerClient(dying);
    lambda = new CrashingLambda(
      chargeOrder(ledger, {
        ledgerOptions: { tools: { 'payments.charge': { reconcile: target.reconcile, leaseSeconds: 5 } } },
      }),
    );
    const resume = lambda.holdResume();
    const runner = new LocalDurableTestRunner({ handlerFunction: lambda.handler });
    const running = runner.run({ payload: { id: 'o-4', cents: 900 } });
    await lambda.crashed();
    expect(target.effects).toHaveLength(1);
    served.ledger.advance(6_000); // the claim's lease runs out
    await served.reconcile(); // the reconciler marks the attempt uncertain
    resume();
    const execution = await running;
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(target.executions).toBe(1);
    expect(target.effects).toHaveLength(1);
    const result = execution.getResult() as { charged: unknown; arn: string };
    expect(result.charged).toEqual({ charge: 1, cents: 900 });
    expect(faults.bodies('reconciliation')).toMatchObject([{ attempt: 1, verdict: 'applied' }]);
    const record = await recordOf(operationIdFrom([result.arn, 'charge-card']));
    expect(record).toMatchObject({ state: 'succeeded', attempt: 1, reconciled: true });
  });

  it('changed arguments under the same step are refused: the step fails at once and nothing runs again', async () => {
    let cents = 500;
    const ledger = ledgerClient();
    const lambda = new CrashingLambda(
      chargeOrder(ledger, { call: (order) => ({ arguments: { order: order.id, cents } }) }),
    ).crashOnCheckpoint(stepSucceeded('charge-card'));
    const resume = lambda.holdResume();
    const runner = new LocalDurableTestRunner({ handlerFunction: lambda.handler });
    const running = runner.run({ payload: { id: 'o-5', cents: 500 } });
    await lambda.crashed();
    cents = 900; // the resumed invocation computes other arguments for the same step
    resume();
    const execution = await running;
    expect(execution.getStatus()).toBe('FAILED');
    expect(execution.getError().errorMessage).toMatch(/422 idempotency_key_reused/);
    expect(faults.bodies('claim')).toHaveLength(2); // the refused claim was not retried
    expect(target.executions).toBe(1);
    expect(target.effects).toHaveLength(1);
  });
});

describe("the SDK's at-most-once mode", () => {
  it('an interrupted at-most-once step raises StepInterruptedError; its retry asks the ledger, which replays: one effect', async () => {
    const ledger = ledgerClient();
    const lambda = new CrashingLambda(
      chargeOrder(ledger, {
        config: { semantics: StepSemantics.AtMostOncePerRetry, retryStrategy: PROMPT_RETRY },
      }),
    ).crashOnCheckpoint(stepSucceeded('charge-card'));
    const runner = new LocalDurableTestRunner({ handlerFunction: lambda.handler });
    const execution = await runner.run({ payload: { id: 'o-12', cents: 400 } });
    expect(execution.getStatus()).toBe('SUCCEEDED');
    const interrupted = execution
      .getHistoryEvents()
      .filter((event) => event.StepFailedDetails?.Error?.Payload?.ErrorType === 'StepInterruptedError');
    expect(interrupted).toHaveLength(1); // what the SDK alone leaves to its user
    expect(interrupted[0]?.StepFailedDetails?.RetryDetails?.NextAttemptDelaySeconds).toBe(1);
    expect(ledger.outcomes.map((o) => [o.replayed, o.executions])).toEqual([
      [false, 1],
      [true, 0],
    ]);
    expect(target.executions).toBe(1);
    expect(target.effects).toHaveLength(1);
    expect((execution.getResult() as { charged: unknown }).charged).toEqual({ charge: 1, cents: 400 });
  });
});

describe('bad input', () => {
  it('is refused with a TypeError naming what is wrong, before anything is sent', async () => {
    const ledger = ledgerClient();
    const handler = withDurableExecution(async (_event: unknown, context: DurableContext) => {
      const refusals: string[] = [];
      const refused = (make: () => unknown) => {
        try {
          make();
          refusals.push('accepted');
        } catch (error) {
          refusals.push(error instanceof TypeError ? error.message : `not a TypeError: ${String(error)}`);
        }
      };
      const call = { tool: 'payments.charge', arguments: {} };
      const charge = (ctx: LedgerStepContext) => target.charge(ctx, 1);
      refused(() => withLedger({} as typeof ledger, context));
      refused(() => withLedger(ledger, {} as DurableContext));
      refused(() => withLedger(ledger, context, { scope: '' }));
      refused(() => withLedger(ledger, context).step('', call, charge));
      refused(() => withLedger(ledger, context).step('x', { arguments: {} } as LedgerStepCall, charge));
      refused(() => withLedger(ledger, context).step('y', call, undefined as unknown as typeof charge));
      return refusals;
    });
    const runner = new LocalDurableTestRunner({ handlerFunction: handler });
    const execution = await runner.run({ payload: {} });
    expect(execution.getResult()).toEqual([
      expect.stringMatching(/needs a ledger client/),
      expect.stringMatching(/needs the durable context/),
      expect.stringMatching(/options.scope/),
      expect.stringMatching(/needs a name/),
      expect.stringMatching(/call.tool/),
      expect.stringMatching(/execute must be a function/),
    ]);
    expect(faults.delivered).toHaveLength(0);
  });

  it('arguments the ledger cannot take or a tool name it refuses fail the step at once: no retry, no effect', async () => {
    for (const call of [
      { tool: 'payments.charge', arguments: { when: 1n } }, // not JSON: refused before sending
      { tool: 'Payments Charge', arguments: {} }, // not a tool name: 400 from the ledger
    ]) {
      const ledger = ledgerClient();
      const sentBefore = faults.bodies('claim').length;
      const runner = new LocalDurableTestRunner({
        handlerFunction: chargeOrder(ledger, { call: () => call }),
      });
      const execution = await runner.run({ payload: { id: 'o-13', cents: 1 } });
      expect(execution.getStatus()).toBe('FAILED');
      expect(faults.bodies('claim').length - sentBefore).toBeLessThanOrEqual(1);
      expect(execution.getInvocations()).toHaveLength(1); // failed in the first invocation: no SDK retry
    }
    expect(target.executions).toBe(0);
  });
});

describe('approval', () => {
  it('the step waits for the ledger approval through the SDK retries, then runs once; never via the work queue', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({
      handlerFunction: chargeOrder(ledger, {
        ledgerOptions: { tools: { 'payments.charge': { requiresApproval: true } } },
        config: { retryStrategy: PROMPT_RETRY },
      }),
    });
    const running = runner.run({ payload: { id: 'o-6', cents: 1200 } });
    const { operation: pending } = await ledger.nth(1);
    expect(pending).toMatchObject({ state: 'awaiting_approval', tool: 'payments.charge' });
    expect(target.executions).toBe(0);
    const approver = new ToolLedgerClient({ endpoint: served.endpoint, signer: bearerToken('approver-a') });
    await approver.approve(pending.operation_id, pending.arguments_digest);
    const execution = await running;
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(execution.getInvocations().length).toBeGreaterThanOrEqual(2);
    expect(ledger.outcomes[0]).toMatchObject({ outcome: 'not_settled', executions: 0 });
    expect(ledger.outcomes.at(-1)).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(target.effects).toHaveLength(1);
    expect(served.ledger.queue.messages).toHaveLength(0);
  });

  it('a rejected approval fails the step at once, without further retries', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({
      handlerFunction: chargeOrder(ledger, {
        ledgerOptions: { tools: { 'payments.charge': { requiresApproval: true } } },
        config: { retryStrategy: PROMPT_RETRY },
      }),
    });
    const running = runner.run({ payload: { id: 'o-7', cents: 1200 } });
    const { operation: pending } = await ledger.nth(1);
    const approver = new ToolLedgerClient({ endpoint: served.endpoint, signer: bearerToken('approver-a') });
    await approver.reject(pending.operation_id, pending.arguments_digest);
    const execution = await running;
    expect(execution.getStatus()).toBe('FAILED');
    expect(execution.getError().errorMessage).toMatch(/ended rejected/);
    expect(ledger.outcomes.at(-1)).toMatchObject({ outcome: 'rejected' });
    // The rejection is told once: no retry replays it.
    expect(ledger.outcomes.filter((o) => o.outcome === 'rejected')).toHaveLength(1);
    expect(target.executions).toBe(0);
  });
});

describe('operation IDs', () => {
  it('a second ledger step with the same name in one execution is refused before it sends anything', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({
      handlerFunction: chargeOrder(ledger, {
        afterCharge: (context) =>
          withLedger(ledger, context).step(
            'charge-card',
            { tool: 'payments.charge', arguments: { order: 'o-8', cents: 1 } },
            (ctx) => target.charge(ctx, 1),
          ),
      }),
    });
    const execution = await runner.run({ payload: { id: 'o-8', cents: 100 } });
    expect(execution.getStatus()).toBe('FAILED');
    expect(execution.getError().errorMessage).toMatch(/operation ID of an earlier step/);
    expect(faults.bodies('claim')).toHaveLength(1);
    expect(target.effects).toHaveLength(1);
  });

  it('map items with a scope each get their own operation; without one the second item is refused, not collapsed into the first', async () => {
    // Two orders that charge the same amount: without a scope their steps would share an ID and the
    // second would silently be the first's replay, so the guard refuses it.
    for (const scoped of [true, false]) {
      const ledger = ledgerClient();
      const before = target.effects.length;
      const handler = withDurableExecution(async (orders: Order[], context: DurableContext) => {
        const results = await context.map(
          'charge-orders',
          orders,
          async (child, order) =>
            withLedger(ledger, child, scoped ? { scope: order.id } : {}).step(
              'charge',
              { tool: 'payments.charge', arguments: { cents: order.cents } },
              (ctx) => target.charge(ctx, order.cents),
            ),
          { completionConfig: { toleratedFailureCount: orders.length } }, // every item runs to its end
        );
        return {
          arn: context.executionContext.durableExecutionArn,
          errors: results.failed().map((item) => item.error.message),
        };
      });
      const runner = new LocalDurableTestRunner({ handlerFunction: handler });
      const execution = await runner.run({
        payload: [
          { id: 'o-9', cents: 10 },
          { id: 'o-10', cents: 10 },
        ],
      });
      expect(execution.getStatus()).toBe('SUCCEEDED');
      const { arn, errors } = execution.getResult() as { arn: string; errors: string[] };
      if (scoped) {
        expect(errors).toEqual([]);
        expect(target.effects.length - before).toBe(2);
        expect(await recordOf(operationIdFrom([arn, 'o-9', 'charge']))).toMatchObject({ state: 'succeeded' });
        expect(await recordOf(operationIdFrom([arn, 'o-10', 'charge']))).toMatchObject({
          state: 'succeeded',
        });
      } else {
        expect(errors).toEqual([expect.stringMatching(/operation ID of an earlier step/)]);
        expect(target.effects.length - before).toBe(1);
      }
    }
  });

  it('options.operationId replaces the default ID', async () => {
    const ledger = ledgerClient();
    const runner = new LocalDurableTestRunner({
      handlerFunction: chargeOrder(ledger, {
        ledgerOptions: { operationId: (step) => `orders/o-11/${step.name}` },
      }),
    });
    const execution = await runner.run({ payload: { id: 'o-11', cents: 50 } });
    expect(execution.getStatus()).toBe('SUCCEEDED');
    expect(await recordOf('orders/o-11/charge-card')).toMatchObject({
      state: 'succeeded',
      tool: 'payments.charge',
    });
  });
});
