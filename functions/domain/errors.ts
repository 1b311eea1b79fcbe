/**
 * Typed errors of tool-ledger. Every error has a stable `code` that clients may branch on; the HTTP
 * status for each code lives in one place (`functions/http/problem.ts`), not here, because the domain
 * knows nothing of HTTP.
 *
 * Messages never contain argument values, results or secrets: they are logged and returned to callers.
 */

/** The stable codes a caller or operator can see. */
export type ErrorCode =
  | 'idempotency_key_missing'
  | 'idempotency_key_invalid'
  | 'validation_failed'
  | 'tool_unknown'
  | 'idempotency_key_reused'
  | 'operation_in_progress'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unauthenticated'
  | 'forbidden'
  | 'host_not_allowed'
  | 'origin_not_allowed'
  | 'self_approval'
  | 'approval_mismatch'
  | 'state_changed'
  | 'not_found'
  | 'ledger_unavailable'
  | 'result_unavailable'
  | 'throttled'
  | 'method_not_allowed'
  | 'tool_executed_by_ledger'
  | 'caller_tool_not_allowed'
  | 'internal_error';

/**
 * Root of every tool-ledger error.
 *
 * @example
 * ```ts
 * try { await submit(call); } catch (e) { if (e instanceof LedgerError) console.log(e.code); }
 * ```
 */
export class LedgerError extends Error {
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** Extra, non-sensitive fields for problem+json (e.g. `retry_after`). */
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LedgerError';
    this.code = code;
    this.details = options?.details ?? {};
  }
}

/** The request failed validation before anything was reserved: no record, key not consumed. */
export class ValidationError extends LedgerError {
  /** Paths of the offending fields (never their values). */
  readonly issues: { path: string; message: string }[];
  constructor(
    message: string,
    issues: { path: string; message: string }[] = [],
    code: ErrorCode = 'validation_failed',
  ) {
    super(code, message, { details: issues.length > 0 ? { issues } : {} });
    this.name = 'ValidationError';
    this.issues = issues;
  }
}

/** The `Idempotency-Key` (operation ID) is missing, malformed or repeated. */
export class OperationIdError extends LedgerError {
  constructor(code: 'idempotency_key_missing' | 'idempotency_key_invalid', message: string) {
    super(code, message);
    this.name = 'OperationIdError';
  }
}

/** No tool of that name is registered. */
export class UnknownToolError extends LedgerError {
  constructor(name: string) {
    super('tool_unknown', `no tool named ${JSON.stringify(name.slice(0, 80))}`);
    this.name = 'UnknownToolError';
  }
}

/** Canonical arguments or a body exceed their size limit. */
export class PayloadTooLargeError extends LedgerError {
  constructor(message: string) {
    super('payload_too_large', message);
    this.name = 'PayloadTooLargeError';
  }
}

/** The same operation ID was used with a different arguments digest. Nothing ran. */
export class IdempotencyConflictError extends LedgerError {
  constructor(operationId: string, storedDigest: string) {
    super(
      'idempotency_key_reused',
      'this operation ID was first used with different arguments; use a new operation ID for a new action',
      { details: { operation_id: operationId, arguments_digest: storedDigest } },
    );
    this.name = 'IdempotencyConflictError';
  }
}

/** A conditional write found the record in another state than the caller expected. */
export class StateChangedError extends LedgerError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('state_changed', message, { details });
    this.name = 'StateChangedError';
  }
}

/** The tenant has no such operation. */
export class NotFoundError extends LedgerError {
  constructor(message = 'no such operation') {
    super('not_found', message);
    this.name = 'NotFoundError';
  }
}

/** Authentication failed (401) or the caller lacks a role (403). */
export class AccessError extends LedgerError {
  constructor(code: 'unauthenticated' | 'forbidden' | 'self_approval', message: string) {
    super(code, message);
    this.name = 'AccessError';
  }
}

/**
 * A request to local mode that names another host than the machine's own (a web page that rebinds its
 * domain to 127.0.0.1 sends its own name), or comes from another origin (functions/local/loopback-guard.ts).
 */
export class RequestOriginError extends LedgerError {
  constructor(code: 'host_not_allowed' | 'origin_not_allowed', message: string) {
    super(code, message);
    this.name = 'RequestOriginError';
  }
}

/** An approval named a digest that is not the record's. */
export class ApprovalMismatchError extends LedgerError {
  constructor(storedDigest: string) {
    super('approval_mismatch', 'the approval names a different arguments digest than the operation', {
      details: { arguments_digest: storedDigest },
    });
    this.name = 'ApprovalMismatchError';
  }
}

/**
 * An operation the caller executes names a tool the deployment runs itself (the contract, §14): its
 * guarantees come from the ledger running it, so it is submitted without `execution: "caller"`.
 */
export class ToolExecutedByLedgerError extends LedgerError {
  constructor() {
    super(
      'tool_executed_by_ledger',
      'this deployment runs that tool itself: submit it without "execution": "caller"',
      { details: { issues: [{ path: '$.tool', message: 'executed by the ledger' }] } },
    );
    this.name = 'ToolExecutedByLedgerError';
  }
}

/** The deployment does not let this tenant declare that tool for operations it executes itself. */
export class CallerToolNotAllowedError extends LedgerError {
  constructor() {
    super(
      'caller_tool_not_allowed',
      'this deployment does not allow that tool name for operations its caller executes',
      { details: { issues: [{ path: '$.tool', message: 'not allowed' }] } },
    );
    this.name = 'CallerToolNotAllowedError';
  }
}

/**
 * The ledger could not be reached, or was throttled beyond retries, before a decision was durable.
 * Nothing ran.
 */
export class LedgerUnavailableError extends LedgerError {
  constructor(message: string, cause?: unknown) {
    super('ledger_unavailable', message, { cause });
    this.name = 'LedgerUnavailableError';
  }
}

/**
 * The operation's result is kept in the object store and cannot be given back as it was recorded: the
 * object is missing, does not match the SHA-256 and size its record holds, or the store did not
 * answer. The operation's state is unchanged (its effect happened once); nothing ran. Answering
 * anything else would be a wrong result.
 */
export class ResultUnavailableError extends LedgerError {
  constructor(message: string, cause?: unknown) {
    super('result_unavailable', message, { cause });
    this.name = 'ResultUnavailableError';
  }
}

/** The caller's tenant made more requests this second than the deployment allows it. Nothing ran. */
export class TenantThrottledError extends LedgerError {
  constructor(limit: number) {
    super('throttled', `the tenant is limited to ${limit} requests per second`, {
      details: { retry_after: 1 },
    });
    this.name = 'TenantThrottledError';
  }
}

/** Returns the class name of an error for logs (never its message, which may carry values). */
export function errorClass(error: unknown): string {
  if (error instanceof Error) return error.name || error.constructor.name;
  return typeof error;
}
