import type { OperationSnapshot } from '../domain/operation';

/**
 * What became of a call. The HTTP, MCP and SQS front doors map each kind to a status, a tool result
 * or an acknowledgement. `record` is the operation as the caller is shown it: a ledger record for
 * writes, a read's answer for read tools (engine/read-tool-path.ts).
 * - `completed`: terminal (201); `replayed` when this request did not run it.
 * - `retryable`: this request's attempt ended `failed_retryable` (503).
 * - `in_progress`: a worker holds a live lease (409).
 * - `accepted`: queued, awaiting approval, uncertain, needs reconciliation, or pending with an expired lease (202).
 */
export type SubmitResult =
  | { kind: 'completed'; record: OperationSnapshot; replayed: boolean }
  | { kind: 'retryable'; record: OperationSnapshot; retryAfterSeconds: number }
  | { kind: 'in_progress'; record: OperationSnapshot; retryAfterSeconds: number }
  | { kind: 'accepted'; record: OperationSnapshot; retryAfterSeconds: number; replayed: boolean };
