import type { DurableContext, DurableLogger, DurablePromise } from '@aws/durable-execution-sdk-js';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { envelopeForOperation, toModelToolResult } from '../../client/adapters/result-envelope';
import {
  durableOperationId,
  type LedgerStepContext,
  LedgerStepError,
  type LedgerSteps,
  withLedger,
} from '../../client/durable-entry';
import {
  bearerToken,
  type Operation,
  operationIdFrom,
  type RunOutcome,
  ToolLedgerClient,
} from '../../client/index';

/*
 * The durable entry's pure parts: the default operation ID, the error a step throws, and its types
 * against the SDK's own (type-checking this file, part of `npm test`, is the type-level test). The
 * behaviour under the SDK's runner and the real ledger is in test/client-e2e/durable.test.ts.
 */

describe('durableOperationId', () => {
  const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:orders:3/durable-execution/order-7/5f1c';

  it('is the execution ARN and the step name, the same for every invocation of the execution', () => {
    const id = durableOperationId({ executionArn: arn, name: 'charge-card', tool: 'payments.charge' });
    expect(id).toBe(operationIdFrom([arn, 'charge-card']));
    expect(durableOperationId({ executionArn: arn, name: 'charge-card', tool: 'payments.charge' })).toBe(id);
  });

  it('differs by execution, by step name and by scope, and not by tool (the tool is part of the digest)', () => {
    const base = { executionArn: arn, name: 'charge-card', tool: 'payments.charge' };
    const ids = new Set([
      durableOperationId(base),
      durableOperationId({ ...base, executionArn: `${arn}0` }),
      durableOperationId({ ...base, name: 'charge-card-2' }),
      durableOperationId({ ...base, scope: 'order-1' }),
      durableOperationId({ ...base, scope: 'order-2' }),
    ]);
    expect(ids.size).toBe(5);
    expect(durableOperationId({ ...base, tool: 'payments.other' })).toBe(durableOperationId(base));
  });

  it('a scope cannot be confused with a step name that contains the separator', () => {
    const scoped = durableOperationId({ executionArn: arn, scope: 'a', name: 'b', tool: 't' });
    const joined = durableOperationId({ executionArn: arn, name: 'a/b', tool: 't' });
    expect(scoped).not.toBe(joined);
  });

  it('stays a valid operation ID for a long ARN and name (a readable prefix and a hash)', () => {
    const id = durableOperationId({
      executionArn: `${arn}/${'x'.repeat(200)}`,
      name: 'n'.repeat(80),
      tool: 't',
    });
    expect(id.length).toBeLessThanOrEqual(255);
    expect(id).toMatch(/^[\x21-\x7e]+~[A-Za-z0-9_-]{43}$/);
  });
});

function outcomeOf(operation: Operation, outcome: RunOutcome['outcome']): RunOutcome {
  return {
    outcome,
    operation,
    replayed: false,
    result: undefined,
    executions: 0,
    model: toModelToolResult(envelopeForOperation(operation, false)),
  };
}

const operation = (state: Operation['state'], error?: Operation['error']): Operation =>
  ({
    operation_id: 'exec-1/charge-card',
    tool: 'payments.charge',
    state,
    arguments_digest: 'v1:00',
    attempt: 1,
    replayed: false,
    result: null,
    error: error ?? null,
    created_at: '2026-01-01T00:00:00Z',
    completed_at: null,
  }) as Operation;

describe('LedgerStepError', () => {
  it('not settled: retryable, says what the operation waits for in the words the model adapters use', () => {
    const error = new LedgerStepError(
      'charge-card',
      outcomeOf(operation('awaiting_approval'), 'not_settled'),
    );
    expect(error).toMatchObject({ code: 'not_settled', final: false, operationId: 'exec-1/charge-card' });
    expect(error.message).toMatch(
      /"charge-card".*awaiting_approval: this action is waiting for human approval/,
    );
    expect(error.model.envelope.state).toBe('awaiting_approval');
  });

  it('a terminal failure or a rejection is final, and names the stored error code only', () => {
    const failed = new LedgerStepError(
      'charge-card',
      outcomeOf(
        operation('failed_terminal', { code: 'card_declined', message: 'declined for 4242' }),
        'failed',
      ),
    );
    expect(failed).toMatchObject({ code: 'failed', final: true });
    expect(failed.message).toMatch(/ended failed_terminal \(card_declined\)/);
    expect(failed.message).not.toMatch(/4242/);
    const rejected = new LedgerStepError('charge-card', outcomeOf(operation('rejected'), 'rejected'));
    expect(rejected).toMatchObject({ code: 'rejected', final: true, name: 'LedgerStepError' });
  });
});

describe('withLedger types (durable execution SDK)', () => {
  it("takes the SDK's own context, keeps its logger type in the step's context, and returns the SDK's promise", () => {
    interface AuditLogger extends DurableLogger {
      audit(message: string): void;
    }
    type Steps = LedgerSteps<AuditLogger>;
    const stepsOf = (context: DurableContext<AuditLogger>): Steps =>
      withLedger(new ToolLedgerClient({ endpoint: 'http://127.0.0.1:9', signer: bearerToken('t') }), context);
    expectTypeOf(stepsOf).returns.toEqualTypeOf<Steps>();
    type Execute = Parameters<Steps['step']>[2];
    expectTypeOf<Parameters<Execute>[0]>().toEqualTypeOf<LedgerStepContext<AuditLogger>>();
    expectTypeOf<LedgerStepContext<AuditLogger>['downstreamKey']>().toEqualTypeOf<string>();
    expectTypeOf<LedgerStepContext<AuditLogger>['logger']['info']>().toBeFunction();
    // The step resolves to execute's own result type, as the SDK's promise.
    const charge = (steps: Steps) =>
      steps.step('charge-card', { tool: 'payments.charge', arguments: {} }, async () => ({ charge: 1 }));
    expectTypeOf(charge).returns.toEqualTypeOf<DurablePromise<{ charge: number }>>();
    // reconcile is typed by the same result.
    const reconciled = (steps: Steps) =>
      steps.step(
        'charge-card',
        {
          tool: 'payments.charge',
          arguments: {},
          reconcile: () => ({ status: 'applied', result: { charge: 2 } }),
        },
        async () => ({ charge: 1 }),
      );
    expectTypeOf(reconciled).returns.toEqualTypeOf<DurablePromise<{ charge: number }>>();
  });
});
