import { createHash } from 'node:crypto';
import { errorClass } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import { type AnyTool, NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../domain/tool';
import { logger } from '../observability/logger';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { DeadlineExceededError, toolContext, underDeadline } from './tool-invocation';
import { type AttemptOutcome, type Lease, recordOutcome } from './transitions';

/** Largest stored result, UTF-8 bytes (SPEC §4). */
export const MAX_RESULT_BYTES = 32 * 1024;

/**
 * Runs one attempt of a claimed operation and records its outcome (SPEC §3 steps 5–7): the tool gets
 * an AbortSignal that fires at the lease's hard deadline, and the engine stops waiting then even if
 * the tool ignores the signal. Returns the record as the commit left it (or as found, if another
 * writer had moved it on).
 */
export async function runAttempt(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  lease: Lease,
): Promise<OperationRecord> {
  const started = deps.clock();
  const outcome = await execute(deps, record, tool, args, lease, started);
  if (outcome.state !== 'failed_retryable' && record.attempt === 1)
    deps.metrics.count('FirstExecutions', tool.name);
  return recordOutcome(deps, req, record, tool, lease, outcome);
}

async function execute(
  deps: LedgerDeps,
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  lease: Lease,
  started: number,
): Promise<AttemptOutcome> {
  // A worker that stalled between its claim and here (a GC pause, a slow DynamoDB answer) may hold an
  // expired lease: the reconciler may already have decided this attempt and a newer one may be running.
  // Starting now would break "an expired lease means the holder is dead", so the tool is never started
  // at or past its deadline; the outcome is "not applied", whose commit (conditional on `pending` and
  // this attempt) lands only if nobody has moved the record on.
  if (deps.clock() >= lease.deadline) {
    return {
      state: 'failed_retryable',
      outcomeCode: 'deadline_before_start',
      error: {
        code: 'deadline_before_start',
        message: 'the attempt reached its deadline before the tool started',
      },
      durationMs: 0,
    };
  }
  const identity = {
    tenant: record.tenant,
    operationId: record.operation_id,
    reservationId: record.reservation_id,
    toolName: record.tool,
    attempt: record.attempt,
  };
  try {
    const value = await underDeadline(lease.deadline, deps.clock, (signal) =>
      tool.execute(args, toolContext(identity, signal)),
    );
    const { json, code } = sanitize(tool, value, args);
    return { state: 'succeeded', outcomeCode: code, result: json, durationMs: deps.clock() - started };
  } catch (error) {
    return classify(error, deps.clock() - started);
  }
}

/** Maps what `execute` threw to an outcome (SPEC §4): terminal, not applied, or unknown. */
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
    message: 'the outcome of the attempt is unknown; it will be reconciled',
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
