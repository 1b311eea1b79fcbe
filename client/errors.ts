import type { Operation, Problem } from './api-types';

/**
 * Root of every error the client throws. `code` is stable and safe to branch on; for errors the
 * server answered, it is the problem+json `code` (the tool-ledger contract, §5).
 *
 * @example
 * ```ts
 * try { await client.call(input); } catch (e) { if (e instanceof ToolLedgerError) console.log(e.code); }
 * ```
 */
export class ToolLedgerError extends Error {
  /** Stable machine-readable code. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolLedgerError';
    this.code = code;
  }
}

/**
 * The server refused the request with a status that retrying cannot change (a 4xx other than an
 * in-progress 409). Nothing ran because of this request.
 *
 * @example
 * ```ts
 * catch (e) { if (e instanceof ToolLedgerRequestError && e.code === 'validation_failed') fixArguments(); }
 * ```
 */
export class ToolLedgerRequestError extends ToolLedgerError {
  /** HTTP status. */
  readonly status: number;
  /** The problem document as returned (codes, titles and paths; the server never puts values in it). */
  readonly problem: Problem;

  constructor(status: number, problem: Problem) {
    super(
      problem.code,
      `tool-ledger refused the request: ${status} ${problem.code}` +
        (typeof problem.detail === 'string' && problem.detail !== '' ? `: ${problem.detail}` : ''),
    );
    this.name = 'ToolLedgerRequestError';
    this.status = status;
    this.problem = problem;
  }
}

/**
 * 422 `idempotency_key_reused`: the operation ID was first used with other arguments. Nothing ran.
 * Either the caller derived the same ID for a different action (use a new ID), or the model
 * regenerated a step with changed arguments (decide whether the first action stands).
 *
 * @example
 * ```ts
 * catch (e) { if (e instanceof IdempotencyConflictError) log(e.operationId, e.storedDigest); }
 * ```
 */
export class IdempotencyConflictError extends ToolLedgerRequestError {
  /** The operation ID that conflicted. */
  readonly operationId: string;
  /** The digest stored with the first use of the ID, when the server sent it. */
  readonly storedDigest: string | undefined;

  constructor(operationId: string, problem: Problem) {
    super(422, problem);
    this.name = 'IdempotencyConflictError';
    this.operationId = operationId;
    this.storedDigest = readStoredDigest(problem);
  }
}

/** The digest may come as a top-level problem member or inside `details`, depending on the server build. */
function readStoredDigest(problem: Problem): string | undefined {
  if (typeof problem.arguments_digest === 'string') return problem.arguments_digest;
  const details = problem.details;
  if (details !== null && typeof details === 'object' && 'arguments_digest' in details) {
    const digest = (details as { arguments_digest?: unknown }).arguments_digest;
    if (typeof digest === 'string') return digest;
  }
  return undefined;
}

/**
 * The operation ID is not 1 to 255 characters from 0x21 to 0x7E. Thrown before anything is sent.
 */
export class InvalidOperationIdError extends ToolLedgerError {
  constructor(message: string) {
    super('idempotency_key_invalid', message);
    this.name = 'InvalidOperationIdError';
  }
}

/**
 * The total deadline passed while the call was still being retried (transport errors, in-progress
 * 409s, retryable 503s). The operation may still complete: its ID is unchanged, so call again with
 * the same ID and arguments, or `waitFor` it; never issue the action under a new ID.
 *
 * @example
 * ```ts
 * catch (e) { if (e instanceof DeadlineExceededError) await client.waitFor(id, { timeoutMs: 60_000 }); }
 * ```
 */
export class DeadlineExceededError extends ToolLedgerError {
  /** Requests sent before giving up. */
  readonly attempts: number;
  /** HTTP status of the last answer, if any arrived. */
  readonly lastStatus: number | undefined;
  /** The last operation body seen, if any. */
  readonly lastOperation: Operation | undefined;

  constructor(info: { attempts: number; lastStatus?: number; lastOperation?: Operation; cause?: unknown }) {
    super('deadline_exceeded', `gave up after ${info.attempts} attempt(s): the deadline passed`, {
      cause: info.cause,
    });
    this.name = 'DeadlineExceededError';
    this.attempts = info.attempts;
    this.lastStatus = info.lastStatus;
    this.lastOperation = info.lastOperation;
  }
}

/**
 * `waitFor` ran out of time before the operation reached a state it was waiting for. The last state
 * seen is attached; the operation itself is unaffected.
 */
export class WaitTimeoutError extends ToolLedgerError {
  /** The last operation body seen, if any. */
  readonly lastOperation: Operation | undefined;

  constructor(lastOperation: Operation | undefined, cause?: unknown) {
    super(
      'wait_timeout',
      `the operation did not settle in time (last state: ${lastOperation?.state ?? 'unknown'})`,
      { cause },
    );
    this.name = 'WaitTimeoutError';
    this.lastOperation = lastOperation;
  }
}

/** The server answered with something that is not the documented API (e.g. a proxy's HTML page). */
export class UnexpectedResponseError extends ToolLedgerError {
  /** HTTP status. */
  readonly status: number;

  constructor(status: number, message: string) {
    super('unexpected_response', message);
    this.name = 'UnexpectedResponseError';
    this.status = status;
  }
}

/**
 * The reason `ctx.signal` aborts when `run` loses the claim while `execute` is still running:
 * `claim_lost` when a heartbeat was refused (the lease ended, an operator or the reconciler moved the
 * operation on), `lease_expired` when no heartbeat got an answer before the lease ran out. Either way
 * the effect must stop: the ledger may let another attempt run once the lease is gone. Whatever
 * `execute` then returns or throws is still sent as this attempt's outcome, which the ledger keeps
 * when the attempt is still the operation's, and stores as a late outcome for operators otherwise.
 *
 * @example
 * ```ts
 * execute: async (ctx) => {
 *   await upload(part, { signal: ctx.signal });
 *   if (ctx.signal.aborted) throw ctx.signal.reason; // ClaimLostError: recorded as uncertain
 * }
 * ```
 */
export class ClaimLostError extends ToolLedgerError {
  /** The operation whose claim was lost. */
  readonly operationId: string;
  /** The attempt that held it. */
  readonly attempt: number;

  constructor(code: 'claim_lost' | 'lease_expired', operationId: string, attempt: number, cause?: unknown) {
    super(
      code,
      code === 'claim_lost'
        ? `the claim on attempt ${attempt} was lost: the ledger refused its heartbeat`
        : `the claim on attempt ${attempt} expired: no heartbeat was answered in time`,
      { cause },
    );
    this.name = 'ClaimLostError';
    this.operationId = operationId;
    this.attempt = attempt;
  }
}

/**
 * `run` finished `execute` but could not record the outcome before its deadline (the ledger did not
 * answer). The effect may have happened. Nothing is lost for good: the claim's lease runs out, the
 * reconciler marks the attempt `uncertain`, and the next `run` with the same operation ID calls your
 * `reconcile` (or an operator decides). Never repeat the action under a new operation ID.
 *
 * @example
 * ```ts
 * catch (e) { if (e instanceof OutcomeNotRecordedError) log(e.operationId, e.attempt, e.outcome); }
 * ```
 */
export class OutcomeNotRecordedError extends ToolLedgerError {
  /** The operation whose outcome is unrecorded. */
  readonly operationId: string;
  /** The attempt that ran. */
  readonly attempt: number;
  /** What the attempt came to, as `run` classified it. */
  readonly outcome: 'succeeded' | 'failed_terminal' | 'failed_retryable' | 'uncertain';

  constructor(info: {
    operationId: string;
    attempt: number;
    outcome: OutcomeNotRecordedError['outcome'];
    cause?: unknown;
  }) {
    super(
      'outcome_not_recorded',
      `attempt ${info.attempt} ran (${info.outcome}) but the ledger did not answer in time to record it`,
      { cause: info.cause },
    );
    this.name = 'OutcomeNotRecordedError';
    this.operationId = info.operationId;
    this.attempt = info.attempt;
    this.outcome = info.outcome;
  }
}
