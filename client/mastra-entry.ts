/**
 * `@tool-ledger/client/mastra`: Mastra's tools run through the ledger. A separate entry so that only
 * those who use Mastra (`@mastra/core`, an optional peer dependency) load it; it imports only Mastra's
 * types.
 *
 * @example
 * ```ts
 * import { withLedger } from '@tool-ledger/client/mastra';
 * const tools = withLedger(ledger, { sendEmail, searchDocs }, { read: ['searchDocs'] });
 * ```
 */

export type {
  FrameworkToolCall,
  LedgerApprover,
  LedgerRunner,
  LedgerToolOptions,
} from './adapters/framework-common';
export { currentRunContext, isLedgerEnvelope, ledgerToolName } from './adapters/framework-common';
export type {
  LedgerMastraTool,
  LedgerMastraTools,
  MastraLedgerOptions,
  MastraToolCall,
} from './adapters/mastra';
export { withLedger } from './adapters/mastra';
export type { ToolResultEnvelope } from './adapters/result-envelope';
