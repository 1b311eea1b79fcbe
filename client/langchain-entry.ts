/**
 * `@tool-ledger/client/langchain`: LangChain.js tools (and the LangGraph nodes that call them) run
 * through the ledger. A separate entry so that only those who use LangChain (`@langchain/core`, an
 * optional peer dependency) load it.
 *
 * @example
 * ```ts
 * import { withLedger } from '@tool-ledger/client/langchain';
 * const tools = withLedger(ledger, [refund, lookup], { read: ['lookup'] });
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
export type {
  LangChainLedgerOptions,
  LangChainToolCall,
  LedgerApprovalAnswer,
  LedgerApprovalRequest,
} from './adapters/langchain';
export { withLedger } from './adapters/langchain';
export type { ToolResultEnvelope } from './adapters/result-envelope';
