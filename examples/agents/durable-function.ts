import { type DurableContext, withDurableExecution } from '@aws/durable-execution-sdk-js';
import { ToolLedgerClient } from '@tool-ledger/client';
import { withLedger } from '@tool-ledger/client/durable';
import { sigv4Signer } from '@tool-ledger/client/sigv4';

interface Order {
  id: string;
  cents: number;
}

/** Your payment service: it dedupes on the idempotency key it is given, and finds a charge by it. */
declare const payments: {
  charge(
    order: Order,
    options: { idempotencyKey: string; signal: AbortSignal },
  ): Promise<{ chargeId: string }>;
  find(idempotencyKey: string): Promise<{ chargeId: string } | undefined>;
};

// The function calls the ledger's API as its own role (SigV4): grant it with ledger.grantAgent(fn).
const ledger = new ToolLedgerClient({
  endpoint: process.env.LEDGER_API_URL ?? 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod',
  signer: sigv4Signer({ region: process.env.AWS_REGION ?? 'eu-west-1' }),
});

export const handler = withDurableExecution(async (order: Order, context: DurableContext) => {
  const steps = withLedger(ledger, context, {
    tools: {
      'payments.charge': {
        // After a crash between the charge and its record, the next invocation asks the target.
        reconcile: async (ctx) => {
          const found = await payments.find(ctx.downstreamKey);
          return found ? { status: 'applied', result: found } : { status: 'not_applied' };
        },
      },
    },
  });
  // context.step, with the charge made at most once under the operation ID <execution ARN>/charge-card.
  const charge = await steps.step(
    'charge-card',
    { tool: 'payments.charge', arguments: { order: order.id, cents: order.cents } },
    (ctx) => payments.charge(order, { idempotencyKey: ctx.downstreamKey, signal: ctx.signal }),
  );
  await context.wait({ hours: 1 }); // the execution suspends; later invocations replay the step from its checkpoint
  return charge;
});
