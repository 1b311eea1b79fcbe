import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { defineTool, type ToolFactory } from 'tool-ledger/tool';
import * as z from 'zod';

/** A ticket desk kept in one file: each ticket opened is a line of `tickets.log`. */
const tools: ToolFactory = (env) => [
  defineTool({
    name: 'tickets.open',
    description: 'Opens a ticket',
    effect: 'write',
    // strictObject: a misspelled field is refused by name (`unknown field "titel"`); z.object would drop it
    schema: z.strictObject({ title: z.string().min(1).max(200) }),
    async execute(args, ctx) {
      // A real desk gets ctx.downstreamKey, to deduplicate, and honours ctx.signal (the hard deadline).
      // Throw TerminalToolError for a refusal that retrying cannot fix; anything else thrown is uncertain.
      ctx.signal.throwIfAborted();
      await mkdir(env.workspaceRoot, { recursive: true });
      const line = `${ctx.downstreamKey} ${JSON.stringify(args.title)}\n`;
      await appendFile(path.join(env.workspaceRoot, 'tickets.log'), line);
      return { ticket: ctx.operationId };
    },
  }),
];

export default tools;
