import type { Operation, OperationPage, Problem, ToolDescription } from '../client/api-types';
import { ToolLedgerError, ToolLedgerRequestError, UnexpectedResponseError } from '../client/errors';
import type { RequestSigner } from '../client/signer';
import { type ListOptions, type Resolution, ToolLedgerClient } from '../client/tool-ledger-client';
import { operationPath, RECONCILIATIONS_PATH } from '../functions/contract/routes';
import { type Connection, signerFor } from './connection';

/** One shard of a reconciliation pass, as `POST /v1/reconciliations` reports it. */
export interface ShardReport {
  shard: string;
  read: number;
  acted: number;
}

/** The answer of `POST /v1/reconciliations`: counts only, never operation IDs or tenants. */
export interface ReconcileReport {
  shards: ShardReport[];
  /** Items read across all shards (the cost of the pass). */
  read: number;
  /** Query pages fetched. */
  pages: number;
  /** Decisions by kind (`reconciled_applied`, `requeued`, `approval_expired`, …). */
  actions: Record<string, number>;
  /** Records another writer had already moved on (a concurrent pass, a late commit). */
  skipped: number;
  /** Records whose check did not fit the pass's time, left for the scheduled pass (absent from older APIs). */
  deferred?: number;
  /** False when the pass did not do everything in its time; the next scheduled pass takes the rest. */
  complete?: boolean;
}

/** What to include when reading one operation. */
export interface GetOptions {
  /** The normalized arguments (approver or operator role). */
  arguments?: boolean;
  /** The bounded state history kept on the record. */
  history?: boolean;
}

/**
 * The operator and approver side of the HTTP API, as the CLI's commands use it. Commands depend on
 * this interface only, so a test may hand in its own; the CLI itself uses {@link HttpOperatorApi}.
 */
export interface OperatorApi {
  list(options: ListOptions): Promise<OperationPage>;
  get(operationId: string, options?: GetOptions): Promise<Operation>;
  approve(operationId: string, argumentsDigest: string): Promise<Operation>;
  reject(operationId: string, argumentsDigest: string): Promise<Operation>;
  resolve(operationId: string, resolution: Resolution): Promise<Operation>;
  tools(): Promise<ToolDescription[]>;
  reconcile(): Promise<ReconcileReport>;
}

/** An operator waits for an answer; it should not watch a silent retry loop for a minute. */
const CLI_DEADLINE_MS = 10_000;

/**
 * A reconciliation pass may ask every due record's target; API Gateway stops waiting after 29 s, and
 * local mode's API function after its own timeout, so this only bounds a hung connection.
 */
const RECONCILE_TIMEOUT_MS = 60_000;

/**
 * {@link OperatorApi} over HTTP. Everything the agent-side {@link ToolLedgerClient} already does (typed
 * errors, signing, retries of what a retry can change) goes through it; the two calls it does not
 * offer, reading with `include=history` and `POST /v1/reconciliations`, are sent here once each with
 * the same signer and the same problem+json handling. Neither is retried: a read is cheap to run
 * again by hand, and a pass that timed out may still be running on the server.
 *
 * @example
 * ```ts
 * const api = await HttpOperatorApi.connect({ endpoint: new URL('http://127.0.0.1:3000'), auth });
 * const page = await api.list({ state: 'needs_reconciliation' });
 * ```
 */
export class HttpOperatorApi implements OperatorApi {
  private readonly client: ToolLedgerClient;

  private constructor(
    private readonly endpoint: URL,
    private readonly signer: RequestSigner | undefined,
    private readonly fetchImpl: typeof fetch,
  ) {
    this.client = new ToolLedgerClient({
      endpoint,
      ...(signer ? { signer } : {}),
      fetch: fetchImpl,
      deadlineMs: CLI_DEADLINE_MS,
      // An operator should hear at once that nothing listens there, not after seconds of silent retries.
      onUnreachable: 'fail',
    });
  }

  /** Builds the API for a connection (loading the SigV4 signer only when it is asked for). */
  static async connect(connection: Connection, fetchImpl: typeof fetch = fetch): Promise<HttpOperatorApi> {
    return new HttpOperatorApi(connection.endpoint, await signerFor(connection.auth), fetchImpl);
  }

  list(options: ListOptions): Promise<OperationPage> {
    return this.client.list(options);
  }

  async get(operationId: string, options: GetOptions = {}): Promise<Operation> {
    if (!options.history)
      return this.client.get(operationId, { includeArguments: options.arguments === true });
    const include = options.arguments ? 'arguments,history' : 'history';
    const body = await this.send('GET', operationPath(operationId), { include });
    if (!isRecord(body) || typeof body.operation_id !== 'string' || typeof body.state !== 'string') {
      throw new UnexpectedResponseError(200, 'the response is not an operation');
    }
    return body as Operation;
  }

  approve(operationId: string, argumentsDigest: string): Promise<Operation> {
    return this.client.approve(operationId, argumentsDigest);
  }

  reject(operationId: string, argumentsDigest: string): Promise<Operation> {
    return this.client.reject(operationId, argumentsDigest);
  }

  resolve(operationId: string, resolution: Resolution): Promise<Operation> {
    return this.client.resolve(operationId, resolution);
  }

  tools(): Promise<ToolDescription[]> {
    return this.client.tools();
  }

  async reconcile(): Promise<ReconcileReport> {
    const body = await this.send('POST', RECONCILIATIONS_PATH, {}, RECONCILE_TIMEOUT_MS);
    if (!isReconcileReport(body)) {
      throw new UnexpectedResponseError(200, 'the response is not a reconciliation report');
    }
    return body;
  }

  /** One signed request; a non-2xx answer becomes the client's {@link ToolLedgerRequestError}. */
  private async send(
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string>,
    timeoutMs = CLI_DEADLINE_MS,
  ): Promise<unknown> {
    const url = new URL(this.endpoint);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const base = { accept: 'application/json, application/problem+json' };
    const headers = this.signer ? await this.signer.sign({ method, url, headers: { ...base } }) : base;
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      throw new ToolLedgerError('unreachable', `no answer from ${url.origin} (${transportReason(error)})`, {
        cause: error,
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (response.status >= 200 && response.status < 300) {
      if (body === undefined)
        throw new UnexpectedResponseError(response.status, 'the response body is not JSON');
      return body;
    }
    const problem: Problem =
      isRecord(body) && typeof body.code === 'string'
        ? (body as Problem)
        : { code: `http_${response.status}`, status: response.status };
    throw new ToolLedgerRequestError(response.status, problem);
  }
}

/** A short, value-free reason for a failed request: the system error code or the error's class. */
export function transportReason(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  for (const candidate of [cause, error]) {
    if (isRecord(candidate) && typeof candidate.code === 'string') return candidate.code;
  }
  // fetch's refusal of a blocked port carries no code, only this message.
  if (cause instanceof Error && cause.message === 'bad port') return 'bad port';
  return error instanceof Error ? error.name : 'unknown error';
}

function isReconcileReport(value: unknown): value is ReconcileReport {
  return (
    isRecord(value) &&
    Array.isArray(value.shards) &&
    value.shards.every(
      (s) =>
        isRecord(s) &&
        typeof s.shard === 'string' &&
        typeof s.read === 'number' &&
        typeof s.acted === 'number',
    ) &&
    typeof value.read === 'number' &&
    typeof value.pages === 'number' &&
    typeof value.skipped === 'number' &&
    isRecord(value.actions)
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
