import { ToolLedgerError, ToolLedgerRequestError } from '../../client/errors';
import type { ErrorCode } from '../../functions/domain/errors';
import { PROBLEMS, problemType } from '../../functions/http/problem';

/** A problem document as the console's forwarder answers it, with the HTTP status to send. */
export interface ConsoleProblem {
  status: number;
  body: Record<string, unknown>;
}

/**
 * Client-side failures that have no answer from the API behind them: the console names them with
 * the client's own codes (what the CLI prints for them too), since no API code says "no answer".
 */
const NO_ANSWER: Readonly<Record<string, { status: number; title: string }>> = {
  unreachable: { status: 502, title: 'The API could not be reached' },
  deadline_exceeded: { status: 504, title: 'The API did not answer in time' },
  unexpected_response: { status: 502, title: 'The API answered something that is not the API' },
};

/**
 * The forwarder's own refusal, with the API's code, status and title (the one table of them), so the
 * page shows the console's refusals exactly as it shows the API's.
 *
 * @example
 * ```ts
 * problemOf('forbidden', 'requests from another origin are refused');
 * // { status: 403, body: { type: 'urn:tool-ledger:problem:forbidden', title: 'Forbidden', code: 'forbidden', … } }
 * ```
 */
export function problemOf(
  code: ErrorCode,
  detail?: string,
  extras: Record<string, unknown> = {},
): ConsoleProblem {
  const kind = PROBLEMS[code];
  const body: Record<string, unknown> = {
    type: problemType(code),
    title: kind.title,
    status: kind.status,
    code,
  };
  if (detail !== undefined) body.detail = detail;
  return { status: kind.status, body: { ...extras, ...body } };
}

/**
 * Whatever a call through the operator API threw, as a problem for the page: the API's own problem
 * document passed on unchanged (code, title, detail, and the record of a `state_changed`); a request
 * that never got an answer under the client's code; anything else `internal_error`, without its
 * message (it may be an SDK's, with local paths or account details).
 */
export function problemFromError(error: unknown): ConsoleProblem {
  if (error instanceof ToolLedgerRequestError) {
    return { status: error.status, body: { ...error.problem, status: error.status } };
  }
  if (error instanceof ToolLedgerError) {
    if (error.code === 'idempotency_key_invalid') return problemOf('idempotency_key_invalid', error.message);
    const kind = NO_ANSWER[error.code];
    if (kind) {
      return {
        status: kind.status,
        body: { title: kind.title, status: kind.status, code: error.code, detail: error.message },
      };
    }
  }
  return problemOf(
    'internal_error',
    error instanceof Error ? `the console failed (${error.name})` : undefined,
  );
}
