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
export { ToolLedgerConfigError } from './config-error';
export { LAMBDA_WORKSPACE_DIR } from './environment';
export { ToolLedger } from './tool-ledger';
export type {
  CallerToolRuleProps,
  HandlerName,
  TenantPrincipals,
  ToolLedgerProps,
  ToolSecret,
} from './tool-ledger-props';
export { ToolLedgerStack, type ToolLedgerStackProps } from './tool-ledger-stack';
export { readToolManifest, type ToolManifest } from './tool-manifest';
