import type { APIGatewayProxyResult } from 'aws-lambda';
import { operationPath } from '../contract/routes';
import { type OperationSnapshot, toView, type ViewOptions } from '../domain/operation';

/** What every route answers: an API Gateway proxy result. */
export type ApiResponse = APIGatewayProxyResult;

/** Options of {@link respond}. */
export interface RespondOptions {
  /** @default 'application/json' */
  contentType?: 'application/json' | 'application/problem+json';
  /** Extra headers. Values are built by this module's callers, never copied from a request. */
  headers?: Record<string, string>;
}

/**
 * A JSON response with the headers every answer carries: operation state changes under the caller's
 * feet, so nothing may be cached (`Cache-Control: no-store`), and the body is never sniffed as HTML.
 *
 * @example
 * ```ts
 * respond(200, { ok: true }); // { statusCode: 200, headers: { 'Content-Type': 'application/json', ... }, body }
 * ```
 */
export function respond(status: number, body: unknown, options: RespondOptions = {}): ApiResponse {
  return {
    statusCode: status,
    headers: {
      'Content-Type': options.contentType ?? 'application/json',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      ...options.headers,
    },
    body: JSON.stringify(body),
  };
}

/**
 * The path of an operation, as `Location` names it. The ID is percent-encoded as one path segment, so
 * IDs with `/`, `?`, `#` or `%` round-trip and nothing a caller chose can break the header.
 */
export function operationLocation(operationId: string): string {
  return operationPath(operationId);
}

/**
 * An operation body (SPEC §5) with its status and headers.
 *
 * @example
 * ```ts
 * operationResponse(201, record, { replayed: true }, { Location: operationLocation(record.operation_id) });
 * ```
 */
export function operationResponse(
  status: number,
  record: OperationSnapshot,
  view: ViewOptions = {},
  headers: Record<string, string> = {},
): ApiResponse {
  return respond(status, toView(record, view), { headers });
}
