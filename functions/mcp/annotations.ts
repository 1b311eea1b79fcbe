import type { AnyTool, ToolAnnotations } from '../domain/tool';

/**
 * The MCP annotations tool-ledger publishes for a tool in `tools/list`: derived from how the ledger
 * runs it (`readOnlyHint` for read tools, `destructiveHint` for tools that need approval), then the
 * tool's own declared hints on top. A write tool that needs no approval says nothing about
 * destructiveness, so clients keep MCP's cautious default.
 *
 * @example
 * ```ts
 * annotationsOf(deleteFileTool); // { readOnlyHint: false, destructiveHint: true }
 * ```
 */
export function annotationsOf(tool: AnyTool): ToolAnnotations {
  const derived: ToolAnnotations = { readOnlyHint: tool.effect === 'read' };
  if (tool.effect === 'write' && tool.requiresApproval === true) derived.destructiveHint = true;
  return { ...derived, ...tool.annotations };
}
