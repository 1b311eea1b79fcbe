/**
 * `@tool-ledger/client/openai-agents`: the OpenAI Agents SDK's function tools run through the ledger. A
 * separate entry so that only those who use the SDK (`@openai/agents`, an optional peer dependency) load
 * it.
 *
 * @example
 * ```ts
 * import { withLedger } from '@tool-ledger/client/openai-agents';
 * const refund = tool(withLedger(ledger, { name: 'refund', description, parameters, execute }, { runId }));
 * ```
 */

export type {
  FrameworkToolCall,
  LedgerApprover,
  LedgerRunner,
  LedgerToolOptions,
  WithLedgerOptions,
} from './adapters/framework-common';
export { currentRunContext, isLedgerEnvelope, ledgerToolName } from './adapters/framework-common';
export type { OpenAIAgentsLedgerOptions, OpenAIAgentsToolCall } from './adapters/openai-agents';
export { withLedger } from './adapters/openai-agents';
export type { ToolResultEnvelope } from './adapters/result-envelope';
