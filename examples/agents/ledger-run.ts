import { bearerToken, operationIdFor, ToolLedgerClient } from '@tool-ledger/client';

/** A payment provider's client with its own idempotency keys (what a tool of yours would call). */
declare const refunds: {
  create(
    refund: { invoice: string; cents: number },
    options: { idempotencyKey: string; signal: AbortSignal },
  ): Promise<{ id: string }>;
  byKey(idempotencyKey: string): Promise<{ id: string } | undefined>;
};
const ledger = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.TOKEN!),
});

// #region docs
const { outcome, result, model } = await ledger.run({
  operationId: operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 }),
  tool: 'billing.refund',
  arguments: { invoice: 'in_123', cents: 500 },
  execute: (ctx) =>
    refunds.create(
      { invoice: 'in_123', cents: 500 },
      { idempotencyKey: ctx.downstreamKey, signal: ctx.signal },
    ),
  reconcile: async (ctx) => {
    const found = await refunds.byKey(ctx.downstreamKey);
    return found ? { status: 'applied', result: found } : { status: 'not_applied' };
  },
});
// #endregion docs

console.log(outcome, result, model.content);
