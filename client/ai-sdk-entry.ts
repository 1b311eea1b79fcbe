/**
 * `@tool-ledger/client/ai-sdk`: the Vercel AI SDK's tools run through the ledger. A separate entry so
 * that only those who use the AI SDK (`ai`, an optional peer dependency) load it.
 *
 * @example
 * ```ts
 * import { withLedger } from '@tool-ledger/client/ai-sdk';
 * const tools = withLedger(ledger, { sendEmail }, { runId: chatId });
 * ```
 */

export type {
  AiSdkLedgerOptions,
  AiSdkSingleToolOptions,
  AiSdkToolCall,
  LedgerTool,
  LedgerToolSet,
} from './adapters/ai-sdk';
export { withLedger } from './adapters/ai-sdk';
export type {
  FrameworkToolCall,
  LedgerApprover,
  LedgerRunner,
  LedgerToolOptions,
  WithLedgerOptions,
} from './adapters/framework-common';
export { currentRunContext, isLedgerEnvelope, ledgerToolName } from './adapters/framework-common';
export type { ToolResultEnvelope } from './adapters/result-envelope';
