import { type ErrorCode, LedgerError } from '../domain/errors';
import { type ApiResponse, respond } from './responses';

/** Status and title of one error code. */
interface ProblemKind {
  status: number;
  title: string;
}

/**
 * The one place that maps error codes to HTTP statuses (the contract, §5). The domain and the engine raise
 * typed errors with a stable `code`; only this table knows what HTTP makes of them.
 */
export const PROBLEMS: Readonly<Record<ErrorCode, ProblemKind>> = {
  idempotency_key_missing: { status: 400, title: 'Idempotency-Key is missing' },
  idempotency_key_invalid: { status: 400, title: 'Idempotency-Key is invalid' },
  validation_failed: { status: 400, title: 'The request is invalid' },
  tool_unknown: { status: 400, title: 'Unknown tool' },
  tool_executed_by_ledger: { status: 400, title: 'The deployment runs this tool itself' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  forbidden: { status: 403, title: 'Forbidden' },
  host_not_allowed: { status: 403, title: 'The Host is not this machine’s own address' },
  origin_not_allowed: { status: 403, title: 'Requests from another origin are refused' },
  self_approval: { status: 403, title: 'The requester may not approve its own operation' },
  caller_tool_not_allowed: { status: 403, title: 'This tool is not allowed for caller-executed operations' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  operation_in_progress: { status: 409, title: 'The operation is in progress' },
  approval_mismatch: { status: 409, title: 'The approval names other arguments' },
  state_changed: { status: 409, title: 'The operation changed state' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  idempotency_key_reused: { status: 422, title: 'Idempotency-Key reused with different arguments' },
  internal_error: { status: 500, title: 'Internal error' },
  throttled: { status: 429, title: 'Too many requests' },
  ledger_unavailable: { status: 503, title: 'The ledger is unavailable' },
  result_unavailable: { status: 503, title: 'The operation’s stored result cannot be read' },
};

/** Seconds a client should wait after `ledger_unavailable` (throttling clears in about that long). */
export const LEDGER_UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** Members of a problem body that details may never overwrite. */
const RESERVED = new Set(['type', 'title', 'status', 'code', 'detail', 'request_id']);

/** The problem `type` URI of a code: a stable name, not a page to fetch (RFC 9457 §3.1.1). */
export function problemType(code: ErrorCode): string {
  return `urn:tool-ledger:problem:${code}`;
}

/** The HTTP status of an error code. */
export function statusOf(code: ErrorCode): number {
  return PROBLEMS[code].status;
}

/**
 * Renders any thrown value as an `application/problem+json` response. A {@link LedgerError} keeps its
 * code, message (as `detail`; domain messages never carry argument values) and details; anything else
 * is `internal_error` with no message, so stack traces and SDK messages never reach a caller.
 *
 * @example
 * ```ts
 * problemResponse(new NotFoundError(), 'req-1');
 * // 404 {"type":"urn:tool-ledger:problem:not_found","title":"Not found","status":404,"code":"not_found",...}
 * ```
 */
export function problemResponse(
  error: unknown,
  requestId: string,
  extras: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): ApiResponse {
  const known = error instanceof LedgerError && error.code in PROBLEMS;
  const code: ErrorCode = known ? error.code : 'internal_error';
  const kind = PROBLEMS[code];
  const body: Record<string, unknown> = {
    type: problemType(code),
    title: kind.title,
    status: kind.status,
    code,
  };
  if (known && error.message) body.detail = error.message;
  body.request_id = requestId;
  for (const [key, value] of Object.entries({ ...(known ? error.details : {}), ...extras })) {
    if (!RESERVED.has(key)) body[key] = value;
  }
  const extraHeaders: Record<string, string> = { ...headers };
  if (code === 'ledger_unavailable' && extraHeaders['Retry-After'] === undefined) {
    extraHeaders['Retry-After'] = String(LEDGER_UNAVAILABLE_RETRY_AFTER_SECONDS);
  }
  return respond(kind.status, body, { contentType: 'application/problem+json', headers: extraHeaders });
}
