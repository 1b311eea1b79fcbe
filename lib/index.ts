/**
 * What infrastructure teams import, published as `tool-ledger`: the construct (a whole deployment in
 * one `new ToolLedger(...)`), a ready stack around it, and the synth-time tools manifest reader.
 *
 * @example
 * ```ts
 * import { ToolLedger } from 'tool-ledger';
 *
 * new ToolLedger(stack, 'Ledger', {
 *   tenants: { acme: { agents: [agentRoleArn], operators: [opsRoleArn] } },
 *   toolsModule: path.resolve('tools/index.ts'),
 * });
 * ```
 */

export { DEFAULT_TOOLS_MODULE } from './bundling';
export type { DeclaredThroughput } from './capacity';
export { LAMBDA_WORKSPACE_DIR } from './environment';
export { ToolLedgerConfigError } from './settings';
export { type TenantPrincipals, ToolLedger, type ToolLedgerProps } from './tool-ledger';
export { ToolLedgerStack, type ToolLedgerStackProps } from './tool-ledger-stack';
export { readToolManifest, type ToolManifest } from './tool-manifest';
