import { Agent, type RunContext, run, tool } from '@openai/agents';
import { bearerToken, ToolLedgerClient } from '@tool-ledger/client';
import { currentRunContext, withLedger } from '@tool-ledger/client/openai-agents';
import { z } from 'zod';

/** Your payment service: it dedupes on the idempotency key it is given, and finds a refund by it. */
declare const payments: {
  refund(invoice: string, cents: number, options: { idempotencyKey: string }): Promise<{ refundId: string }>;
  find(idempotencyKey: string): Promise<{ refundId: string } | undefined>;
};

/** Your run context: the ID of the request this agent run answers, the same when the run is re-run. */
interface Turn {
  turnId: string;
}

const ledger = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:3000', signer: bearerToken('dev-token') });
// Records in the ledger the approvals people give in the SDK's flow (an approver, not the agent).
const approver = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.LEDGER_APPROVER_TOKEN ?? ''),
});

// What you give tool(), through withLedger: each call runs at most once; a re-run of the step replays it.
const refund = tool(
  withLedger(
    ledger,
    {
      name: 'refund',
      description: 'Refund part of an invoice',
      parameters: z.object({ invoice: z.string(), cents: z.number().int() }),
      needsApproval: true,
      execute: async ({ invoice, cents }) =>
        payments.refund(invoice, cents, { idempotencyKey: currentRunContext()!.downstreamKey }),
    },
    {
      runId: (ctx: RunContext<Turn>) => ctx.context.turnId,
      approver,
      // After a crash between the refund and its record, the next run asks the target.
      reconcile: async (ctx) => {
        const found = await payments.find(ctx.downstreamKey);
        return found ? { status: 'applied', result: found } : { status: 'not_applied' };
      },
    },
  ),
);

const agent = new Agent<Turn>({
  name: 'billing',
  instructions: 'Refund what the customer asks.',
  tools: [refund],
});
const interrupted = await run(agent, 'Refund 5 euros on in_123', { context: { turnId: 'req-7f3a' } });
// The SDK asks for approval as usual; resumed, the approval is recorded in the ledger before the refund.
for (const item of interrupted.interruptions) interrupted.state.approve(item);
const result = await run(agent, interrupted.state);
console.log(result.finalOutput);
