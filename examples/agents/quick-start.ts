import { bearerToken, operationIdFor, ToolLedgerClient } from '@tool-ledger/client';

const ledger = new ToolLedgerClient({
  endpoint: 'http://127.0.0.1:3000',
  signer: bearerToken(process.env.TOKEN!),
});

// One ID per intended action, from state the orchestrator persists: run, step, position in the response.
const operationId = operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 });
const args = { path: 'notes.md', content: 'hello\n' };

// Safe to repeat: a retry, a restarted worker or a replayed turn gets the stored outcome (replayed: true).
const { outcome, operation, replayed } = await ledger.call({
  operationId,
  tool: 'workspace.write_file',
  arguments: args,
});
// outcome: 'succeeded' | 'failed' (a terminal failure, although HTTP said 201) | 'rejected' | 'not_settled'
const settled = outcome === 'not_settled' ? await ledger.waitFor(operationId) : operation;
console.log(outcome, settled.state, settled.result, replayed);
