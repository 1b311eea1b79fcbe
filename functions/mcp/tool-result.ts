import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type ErrorCode, LedgerError } from '../domain/errors';
import { type OperationView, toView } from '../domain/operation';
import type { SubmitResult } from '../engine/submit-result';
import { PROBLEMS } from '../http/problem';
import { META_OPERATION_ID, META_REPLAYED } from './protocol';

/**
 * How a call's outcome reads to a model over MCP. The operation body (the same as
 * `POST /v1/operations` answers) is the `structuredContent`; the first text says plainly what happened
 * and what to do next, because a model that misreads "in progress" or "uncertain" as "failed" will
 * try again with a new operation ID and cause the second effect the ledger exists to prevent. The
 * second text is the body as JSON, for clients that show models text only.
 */

/** What each state tells the model. */
const STATE_TEXT: Record<OperationView['state'], string> = {
  succeeded: 'Done: the action ran once and succeeded.',
  failed_terminal: 'Failed: the action was refused or failed for good. Retrying will not change it.',
  rejected: 'Rejected: an approver refused this action (or its approval expired). It did not run.',
  failed_retryable:
    'Not done: this attempt did not reach the target, so nothing happened. Retry with the same operation ID to run the next attempt.',
  queued:
    'Accepted: the action is queued and will run once. Check back later with the same operation ID; do not use a new one.',
  pending:
    'In progress: a worker is running this action now. Check back later with the same operation ID; do not use a new one.',
  awaiting_approval:
    'Waiting for approval: a human must approve this action before it runs. Check back later with the same operation ID; do not use a new one.',
  uncertain:
    'Outcome uncertain: the action may or may not have happened. tool-ledger is finding out. Do not retry with a new operation ID; check back with the same one.',
  needs_reconciliation:
    'Outcome uncertain: the action may or may not have happened, and an operator must decide. Do not retry with a new operation ID; check back with the same one.',
};

/** The replay prefix: the model must not conclude that the action happened twice, or do it again. */
const REPLAY_TEXT =
  'Already done earlier with this operation ID: this is the original result. Do not repeat the action.';

/**
 * The tool result of a call that reached the ledger.
 *
 * @example
 * ```ts
 * const result = toolResultOf(await submitOperation(deps, req, call));
 * result.structuredContent?.state; // 'succeeded'
 * ```
 */
export function toolResultOf(result: SubmitResult): CallToolResult {
  const replayed = result.kind === 'completed' || result.kind === 'accepted' ? result.replayed : false;
  const body = toView(result.record, { replayed });
  let text: string;
  if (result.kind === 'in_progress') text = STATE_TEXT.pending;
  else if (replayed && result.record.state === 'succeeded') text = REPLAY_TEXT;
  else if (replayed) text = `${STATE_TEXT[body.state]} (Recorded earlier with this operation ID.)`;
  else text = STATE_TEXT[body.state];
  if (body.state === 'failed_terminal' && body.error) text += ` Code: ${body.error.code}.`;
  const terminalFailure = body.state === 'failed_terminal' || body.state === 'rejected';
  return {
    content: [
      { type: 'text', text },
      { type: 'text', text: JSON.stringify(body) },
    ],
    structuredContent: body as unknown as Record<string, unknown>,
    isError: terminalFailure,
    _meta: { [META_REPLAYED]: replayed },
  };
}

/**
 * Titles that say what MCP calls the thing: over HTTP the operation ID is the `Idempotency-Key` header,
 * over MCP it is `_meta["io.tool-ledger/operation-id"]`, and an orchestrator told that a header is
 * missing looks for a header it cannot send. The codes stay those of the HTTP API.
 */
const MCP_TITLES: Partial<Record<ErrorCode, string>> = {
  idempotency_key_missing: `The operation ID (_meta["${META_OPERATION_ID}"]) is missing`,
  idempotency_key_invalid: `The operation ID (_meta["${META_OPERATION_ID}"]) is invalid`,
  idempotency_key_reused: 'The operation ID was used with different arguments',
};

/** What the model should do after each refusal (the code comes from the HTTP API's table). */
const REFUSAL_ADVICE: Partial<Record<string, string>> = {
  idempotency_key_missing: `Nothing ran. Set _meta["${META_OPERATION_ID}"] to a stable operation ID (one per intended action, the same on every retry of it) and call again.`,
  idempotency_key_invalid: 'Nothing ran. The operation ID must be 1 to 255 printable ASCII characters.',
  idempotency_key_reused:
    'Nothing ran: this operation ID was first used with different arguments. Use a new operation ID only for a new action.',
  validation_failed: 'Nothing ran. Fix the arguments to match the tool schema.',
  tool_unknown: 'Nothing ran. No tool of that name is served.',
  payload_too_large: 'Nothing ran. The arguments are too large.',
  forbidden: 'Nothing ran. This caller may not call tools.',
  ledger_unavailable: 'Nothing ran. The ledger is unavailable; retry later with the same operation ID.',
  result_unavailable:
    'The action already happened with this operation ID, but its stored result cannot be read now. Do not repeat the action; check back later with the same operation ID.',
  internal_error: 'The outcome is unknown; retry later with the same operation ID, never a new one.',
};

/**
 * The tool result of a call the ledger refused before anything ran (or could not serve): `isError`,
 * with the same stable code as the HTTP API's problem and its title, worded for MCP where the HTTP one
 * names a header (see `MCP_TITLES`), and no record. Messages never carry
 * argument values (the domain's errors do not), and unexpected errors are reduced to `internal_error`.
 *
 * @example
 * ```ts
 * refusalResult(new OperationIdError('idempotency_key_missing', 'an operation ID is required'), 'req-1');
 * ```
 */
export function refusalResult(error: unknown, requestId: string): CallToolResult {
  const known = error instanceof LedgerError && error.code in PROBLEMS;
  const code = known ? error.code : 'internal_error';
  const title = MCP_TITLES[code] ?? PROBLEMS[code].title;
  const problem: Record<string, unknown> = { code, title, status: PROBLEMS[code].status };
  if (known && error.message) problem.detail = error.message;
  if (known) Object.assign(problem, error.details);
  problem.request_id = requestId;
  const advice = REFUSAL_ADVICE[code] ?? 'Nothing ran.';
  return {
    content: [
      { type: 'text', text: `${title} (${code}). ${advice}` },
      { type: 'text', text: JSON.stringify(problem) },
    ],
    structuredContent: problem,
    isError: true,
    _meta: { [META_REPLAYED]: false },
  };
}
