import { awsDefaultTools, defineTool, TerminalToolError, type ToolFactory } from 'tool-ledger/tool';
import * as z from 'zod';

const createTicket = defineTool({
  name: 'acme.create_ticket',
  description: 'Opens a ticket in ACME Desk',
  effect: 'write',
  schema: z.strictObject({ title: z.string().max(200), body: z.string() }),
  timeoutMs: 8_000,
  retention: 60 * 86_400, // seconds; checked against the queues at synth
  downstreamIdempotent: () => true, // ACME dedupes on Idempotency-Key
  async execute(args, ctx) {
    const res = await fetch('https://desk.acme.example/api/tickets', {
      method: 'POST',
      signal: ctx.signal,
      body: JSON.stringify(args),
      headers: { 'content-type': 'application/json', 'idempotency-key': ctx.downstreamKey },
    });
    if (res.status >= 400 && res.status < 500)
      throw new TerminalToolError(`http_${res.status}`, 'rejected', { status: res.status });
    if (!res.ok) throw new Error(`http_${res.status}`); // outcome unknown: uncertain, reconciled later
    return { id: ((await res.json()) as { id: string }).id };
  },
});

// The shipped webhook.post next to your own tool. `builtinTools(env)` would add the workspace tools too,
// which on AWS need a shared file system (the construct's `sharedWorkspace`; synth refuses them without).
const acmeTools: ToolFactory = (env) => [...awsDefaultTools(env), createTicket];
export default acmeTools;
