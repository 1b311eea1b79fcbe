import type { OperationState } from '../../client/api-types';
import type { Resolution } from '../../client/tool-ledger-client';
import { IDENTITY_PATH, OPERATIONS_PATH, TOOLS_PATH } from '../../functions/contract/routes';
import type { OperatorApi } from '../operator-api';
import { type ConsoleProblem, problemOf } from './problems';

/** What the forwarder answers: a JSON body and its status, or a problem. */
export type Forwarded = { status: number; body: unknown } | { problem: ConsoleProblem };

/** One API call the page may make, as it arrives at the forwarder (`/api` stripped). */
export interface PageRequest {
  method: string;
  /** The path after `/api`, still percent-encoded (`/v1/operations/run-1%3Astep`). */
  path: string;
  query: URLSearchParams;
  /** The parsed JSON body of a POST. */
  body: unknown;
}

const OPERATION = new RegExp(`^${OPERATIONS_PATH}/([^/]+)$`);
const DECISION = new RegExp(`^${OPERATIONS_PATH}/([^/]+)/(approval|resolution)$`);
const OUTCOMES: readonly string[] = ['applied', 'not_applied', 'failed'];

/**
 * The API calls the console makes, and nothing else: the reconciliation queue, one operation (with
 * its arguments and history), an approval, a resolution, the tools and who the credentials are. Each is a call of the CLI's own
 * {@link OperatorApi}, so the console signs, retries and reads problems exactly as `tool-ledger` does;
 * a path outside this list never reaches the API, whatever the page asks (the forwarder holds an
 * operator's credentials, and `POST /v1/operations` or a reconciliation pass are not the console's to
 * send).
 *
 * A resolution must name the attempt the page showed: it applies only while the record is still at
 * that attempt, so a page left open while a retry started can never resolve the new attempt.
 *
 * @example
 * ```ts
 * await forward(api, { method: 'GET', path: '/v1/operations', query: new URLSearchParams('state=uncertain'), body: undefined });
 * // { status: 200, body: { operations: […], next_cursor: '…' | null } }
 * ```
 */
export async function forward(api: OperatorApi, request: PageRequest): Promise<Forwarded> {
  const { method, path, query } = request;
  if (path === OPERATIONS_PATH) {
    if (method !== 'GET') return { problem: problemOf('method_not_allowed') };
    const limit = query.get('limit');
    if (limit !== null && !/^\d{1,4}$/.test(limit)) {
      return { problem: invalid('limit', 'limit must be an integer') };
    }
    const page = await api.list({
      ...(query.get('state') ? { state: query.get('state') as OperationState } : {}),
      ...(query.get('tool') ? { tool: query.get('tool') as string } : {}),
      ...(limit !== null ? { limit: Number(limit) } : {}),
      ...(query.get('cursor') ? { cursor: query.get('cursor') as string } : {}),
    });
    return { status: 200, body: { operations: page.operations, next_cursor: page.cursor ?? null } };
  }
  if (path === IDENTITY_PATH) {
    // The roles of the console's credentials: the page offers only the decisions they may take.
    if (method !== 'GET') return { problem: problemOf('method_not_allowed') };
    return { status: 200, body: await api.identity() };
  }
  if (path === TOOLS_PATH) {
    if (method !== 'GET') return { problem: problemOf('method_not_allowed') };
    return { status: 200, body: { tools: await api.tools() } };
  }
  const one = OPERATION.exec(path);
  if (one) {
    if (method !== 'GET') return { problem: problemOf('method_not_allowed') };
    const id = decodeId(one[1] as string);
    if (id === undefined)
      return { problem: problemOf('idempotency_key_invalid', 'the operation ID is not valid') };
    const include = new Set((query.get('include') ?? '').split(',').filter((part) => part !== ''));
    return {
      status: 200,
      body: await api.get(id, { arguments: include.has('arguments'), history: include.has('history') }),
    };
  }
  const decision = DECISION.exec(path);
  if (decision) {
    if (method !== 'POST') return { problem: problemOf('method_not_allowed') };
    const id = decodeId(decision[1] as string);
    if (id === undefined)
      return { problem: problemOf('idempotency_key_invalid', 'the operation ID is not valid') };
    const body = request.body;
    if (!isRecord(body)) return { problem: invalid('body', 'the body must be a JSON object') };
    if (decision[2] === 'approval') {
      if (body.decision !== 'approve' && body.decision !== 'reject') {
        return { problem: invalid('decision', 'decision must be approve or reject') };
      }
      if (typeof body.arguments_digest !== 'string') {
        return { problem: invalid('arguments_digest', 'the digest shown must be sent') };
      }
      const op =
        body.decision === 'approve'
          ? await api.approve(id, body.arguments_digest)
          : await api.reject(id, body.arguments_digest);
      return { status: 200, body: op };
    }
    if (typeof body.outcome !== 'string' || !OUTCOMES.includes(body.outcome)) {
      return { problem: invalid('outcome', 'outcome must be applied, not_applied or failed') };
    }
    if (typeof body.attempt !== 'number' || !Number.isInteger(body.attempt) || body.attempt < 0) {
      return { problem: invalid('attempt', 'the attempt shown must be sent') };
    }
    const resolution: Resolution = { outcome: body.outcome as Resolution['outcome'], attempt: body.attempt };
    if ('result' in body) resolution.result = body.result;
    return { status: 200, body: await api.resolve(id, resolution) };
  }
  return { problem: problemOf('not_found', 'the console does not forward this path') };
}

function invalid(field: string, message: string): ConsoleProblem {
  return problemOf('validation_failed', message, { issues: [{ path: field, message: 'invalid' }] });
}

function decodeId(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
