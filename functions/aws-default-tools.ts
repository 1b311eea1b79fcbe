import type { ToolFactory } from './tools/registry';
import { webhookPost } from './tools/webhook-post';

/**
 * The tools an AWS deployment ships when it has no shared file system: `webhook.post` alone, whose
 * effect lives at the target. The workspace tools keep their effects in a folder, and each Lambda
 * sandbox has its own `/tmp`, so the construct deploys them (functions/tools/builtin.ts) only when a
 * shared file system is mounted.
 */
export const awsDefaultTools: ToolFactory = (env) => [webhookPost(env)];

/** The default tools module (`#tool-ledger/tools`) of an AWS deployment without a shared workspace. */
export default awsDefaultTools;
