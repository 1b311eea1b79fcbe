import { errorClass } from '../domain/errors';
import { MAX_RESULT_BYTES, payloadSize } from '../domain/payload';
import { type AnyTool, NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../domain/tool';
import { logger } from '../observability/logger';
import { MAX_ITEM_RESULT_BYTES, truncatedResult } from './payloads';
import { DeadlineExceededError } from './tool-invocation';
import type { AttemptOutcome } from './transitions';

/**
 * What a run of a tool becomes (the contract, §4): what it threw, classified as terminal, not applied or
 * unknown; what it returned, sanitized and bounded. An attempt, a read and the reconciler's `applied`
 * verdict all store results by these rules, and an operator's recorded result obeys the same limit.
 */

export { MAX_ITEM_RESULT_BYTES, MAX_RESULT_BYTES };

/**
 * Most UTF-8 bytes of a result kept whole where it is stored as text inside other JSON (a read's
 * cached answer, kept by Powertools idempotency in an item of its own): escaping can grow it by a
 * good part, and the item must stay under DynamoDB's 400 KB.
 */
export const MAX_TEXT_RESULT_BYTES = 192 * 1024;

/**
 * The JSON a result is recorded as. `storedAs: 'compressed'` (a record's result): itself, whole, up to
 * {@link MAX_RESULT_BYTES}; where it is kept (the item, or the object store when its compressed form
 * is over {@link MAX_ITEM_RESULT_BYTES}) is decided at its commit (engine/payloads.ts `placeResult`).
 * `storedAs: 'text'` (a read's cached answer, kept uncompressed as text inside other JSON): itself up
 * to {@link MAX_TEXT_RESULT_BYTES}. Anything larger is `{truncated: true, size, sha256}`. Never an
 * error: the effect happened, and its outcome must be recorded whatever its size.
 *
 * @example
 * ```ts
 * keptResult(JSON.stringify({ log: ciLog })); // the same text, up to 6 MB
 * ```
 */
export function keptResult(json: string, storedAs: 'compressed' | 'text' = 'compressed'): string {
  const size = payloadSize(json);
  if (size <= MAX_ITEM_RESULT_BYTES) return json;
  if (size <= (storedAs === 'text' ? MAX_TEXT_RESULT_BYTES : MAX_RESULT_BYTES)) return json;
  return truncatedResult(json);
}

/** Maps what `execute` threw to an outcome (the contract, §4): terminal, not applied, or unknown. */
export function classify(error: unknown, durationMs: number): AttemptOutcome {
  if (error instanceof TerminalToolError) {
    const stored: AttemptOutcome['error'] = { code: error.code, message: error.message };
    if (error.status !== undefined) stored.status = error.status;
    return { state: 'failed_terminal', outcomeCode: error.code, error: stored, durationMs };
  }
  if (error instanceof NotAppliedError) {
    return {
      state: 'failed_retryable',
      outcomeCode: error.code,
      error: { code: error.code, message: error.message },
      durationMs,
    };
  }
  const code =
    error instanceof DeadlineExceededError
      ? 'timeout'
      : error instanceof UncertainOutcomeError
        ? error.code
        : 'unknown_error';
  const stored: AttemptOutcome['error'] = {
    code,
    message: 'the outcome of the attempt is unknown',
  };
  if (error instanceof UncertainOutcomeError && error.status !== undefined) stored.status = error.status;
  logger.warn('attempt outcome unknown', { outcome_code: code, error_class: errorClass(error) });
  return { state: 'uncertain', outcomeCode: code, error: stored, durationMs };
}

/**
 * Applies the tool's `sanitizeResult`, then {@link keptResult}. A sanitizer that throws stores `null`
 * with outcome `sanitize_failed`: the effect happened, so the commit must still happen.
 */
export function sanitize(
  tool: AnyTool,
  value: unknown,
  args: unknown,
  storedAs: 'compressed' | 'text' = 'compressed',
): { json: string; code: string } {
  let json: string;
  try {
    const clean = tool.sanitizeResult ? tool.sanitizeResult(value, args) : value;
    json = JSON.stringify(clean === undefined ? null : clean) ?? 'null';
  } catch {
    return { json: 'null', code: 'sanitize_failed' };
  }
  return { json: keptResult(json, storedAs), code: 'succeeded' };
}
