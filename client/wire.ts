import type { Operation } from './api-types';
import { UnexpectedResponseError } from './errors';

/**
 * The HTTP exchange as the client's methods share it: one logical request (retried by
 * `ToolLedgerClient`), its raw answer, and the parsing every route's answer goes through.
 */

/** How a route treats answers that a retry might change. */
export type RetryRule = 'operation' | 'plain';

/** An answer as read: status, headers, and the whole body as text. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** One logical request: the body and headers are fixed before the first attempt. */
export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | undefined>;
  headers?: Record<string, string>;
  body?: string;
  rule: RetryRule;
  operationId?: string;
  deadlineMs?: number;
  signal?: AbortSignal;
}

/** The path of one operation (the ID is one percent-encoded segment). */
export function operationPath(operationId: string): string {
  return `/v1/operations/${encodeURIComponent(operationId)}`;
}

/** The body as JSON, or {@link UnexpectedResponseError}. */
export function parseJson(response: RawResponse): unknown {
  try {
    return JSON.parse(response.text);
  } catch (error) {
    throw new UnexpectedResponseError(
      response.status,
      `the response body is not JSON (${(error as Error).name})`,
    );
  }
}

/** The body as an operation, or {@link UnexpectedResponseError}. */
export function parseOperation(response: RawResponse): Operation {
  const body = parseJson(response);
  if (!isRecord(body) || typeof body.operation_id !== 'string' || typeof body.state !== 'string') {
    throw new UnexpectedResponseError(response.status, 'the response is not an operation');
  }
  return body as Operation;
}

/** A plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
