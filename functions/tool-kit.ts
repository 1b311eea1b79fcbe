/**
 * What a tool author imports, published as `tool-ledger/tool`: the tool interface, its context, the
 * three outcome errors, `defineTool`, and the shipped tools' factories to keep them next to a team's
 * own (`awsDefaultTools`: `webhook.post`, what a deployment runs by default; `builtinTools`: every
 * shipped tool, whose workspace tools need the construct's `sharedWorkspace` on AWS). A team's tools live
 * in the team's own repository and import only this; the deployment points the construct's
 * `toolsModule` (or local mode's `TOOL_LEDGER_TOOLS_MODULE`) at the module that default-exports a
 * {@link ToolFactory}.
 *
 * @example
 * ```ts
 * import { awsDefaultTools, defineTool, TerminalToolError, type ToolFactory } from 'tool-ledger/tool';
 * import * as z from 'zod';
 *
 * const openTicket = defineTool({
 *   name: 'tickets.open',
 *   description: 'Opens a ticket in the team tracker.',
 *   effect: 'write',
 *   schema: z.object({ title: z.string().min(1) }),
 *   async execute(args, ctx) {
 *     const res = await fetch('https://tickets.example.com/api', {
 *       method: 'POST',
 *       headers: { 'Idempotency-Key': ctx.downstreamKey },
 *       body: JSON.stringify(args),
 *       signal: ctx.signal,
 *     });
 *     if (res.status === 400) throw new TerminalToolError('rejected', 'the tracker rejected the ticket');
 *     return { id: (await res.json()).id };
 *   },
 * });
 *
 * // The shipped webhook.post next to the team's own tool.
 * const tools: ToolFactory = (env) => [...awsDefaultTools(env), openTicket];
 * export default tools;
 * ```
 */

export { awsDefaultTools } from './aws-default-tools';
export type {
  AnyTool,
  ReconcileContext,
  ReconcileVerdict,
  Tool,
  ToolContext,
  ToolLogger,
} from './domain/tool';
export {
  defineTool,
  NotAppliedError,
  TerminalToolError,
  TOOL_DEFAULTS,
  TOOL_NAME_PATTERN,
  UncertainOutcomeError,
} from './domain/tool';
export { builtinTools } from './tools/builtin';
export type { ToolEnvironment, ToolFactory } from './tools/registry';
