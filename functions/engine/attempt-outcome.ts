import { createHash } from 'node:crypto';
import { errorClass } from '../domain/errors';
import { type AnyTool, NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../domain/tool';
import { logger } from '../observability/logger';
import { DeadlineExceededError } from './tool-invocation';
import type { AttemptOutcome } from './transitions';

/**
 * What a run of a tool becomes (the contract, §4): what it threw, classified as terminal, not applied or
 * unknown; what it returned, sanitized and bounded. An attempt, a read and the reconciler's `applied`
 * verdict all store results by these rules, and an operator's recorded result obeys the same limit.
 */

/** Largest stored result, UTF-8 bytes (the contract, §4). */
export const MAX_RESULT_BYTES = 32 * 1024;

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
 * Applies the tool's `sanitizeResult`, then the size limit. A sanitizer that throws stores `null`
 * with outcome `sanitize_failed`: the effect happened, so the commit must still happen.
 */
export function sanitize(tool: AnyTool, value: unknown, args: unknown): { json: string; code: string } {
  let json: string;
  try {
    const clean = tool.sanitizeResult ? tool.sanitizeResult(value, args) : value;
    json = JSON.stringify(clean === undefined ? null : clean) ?? 'null';
  } catch {
    return { json: 'null', code: 'sanitize_failed' };
  }
  const size = Buffer.byteLength(json, 'utf8');
  if (size > MAX_RESULT_BYTES) {
    const sha256 = createHash('sha256').update(json, 'utf8').digest('hex');
    return { json: JSON.stringify({ truncated: true, size, sha256 }), code: 'succeeded' };
  }
  return { json, code: 'succeeded' };
}
