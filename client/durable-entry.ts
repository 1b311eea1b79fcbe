/**
 * `@tool-ledger/client/durable`: steps of AWS Lambda durable functions whose effect runs at most once
 * under the ledger. A separate entry so that only those who use the durable execution SDK
 * (`@aws/durable-execution-sdk-js`, an optional peer dependency) load it.
 *
 * @example
 * ```ts
 * import { withLedger } from '@tool-ledger/client/durable';
 * const steps = withLedger(ledger, context);
 * ```
 */

export type {
  DurableLedgerOptions,
  DurableStepPosition,
  LedgerStepCall,
  LedgerStepContext,
  LedgerSteps,
  LedgerStepToolOptions,
} from './adapters/durable';
export { durableOperationId, LEDGER_STEP_RETRY, LedgerStepError, withLedger } from './adapters/durable';
export type { LedgerRunner } from './adapters/framework-common';
export type { ReconcileVerdict, RunContext } from './caller-run';
