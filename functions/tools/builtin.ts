import type { ToolFactory } from './registry';
import { webhookPost } from './webhook-post';
import { workspaceAppendLine } from './workspace-append-line';
import { workspaceDeleteFile } from './workspace-delete-file';
import { workspaceWriteFile } from './workspace-write-file';

/**
 * The tools that ship with tool-ledger (the contract, §4), built for one deployment. Building them checks the
 * webhook allow lists, so a malformed origin fails at start-up rather than on the first call.
 *
 * @example
 * ```ts
 * const registry = new ToolRegistry(
 *   builtinTools({ workspaceRoot: '.data/workspace', webhookAllow: ['http://127.0.0.1'], local: true }),
 * );
 * ```
 */
export const builtinTools: ToolFactory = (env) => [
  workspaceWriteFile(env),
  workspaceAppendLine(env),
  workspaceDeleteFile(env),
  webhookPost(env),
];

/** The shipped tools as the default tools module (`#tool-ledger/tools`), which deployments may replace. */
export default builtinTools;
