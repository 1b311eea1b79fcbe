import type {
  CallResultKind,
  Identity,
  Operation,
  OperationPage,
  OperationState,
  Problem,
  ToolDescription,
} from './api-types';
import { callResultKind, TERMINAL_STATES } from './api-types';
import { type BackoffPolicy, backoffDelay, DEFAULT_BACKOFF, parseRetryAfter } from './backoff';
import { type RunInput, type RunOutcome, runOperation } from './caller-run';
import { type Clock, type RandomSource, systemClock } from './clock';
import { completionEventOfBody, type EventQueue } from './completion-events';
import {
  DeadlineExceededError,
  IdempotencyConflictError,
  ToolLedgerError,
  ToolLedgerRequestError,
  UnexpectedResponseError,
  WaitTimeoutError,
} from './errors';
import { assertOperationId, formatIdempotencyKey } from './operation-id';
import type { RequestSigner } from './signer';
import { toolCallSpan, traceHeaders } from './tracing';
import {
  isRecord,
  operationPath,
  parseJson,
  parseOperation,
  type RawResponse,
  type RequestSpec,
  type RetryRule,
} from './wire';

export type { CallResultKind } from './api-types';
export { callResultKind } from './api-types';

/** Options of {@link ToolLedgerClient}. */
export interface ToolLedgerClientOptions {
  /** Base URL of the API, with the stage path if any (`https://x.execute-api.eu-west-1.amazonaws.com/prod`). */
  endpoint: string | URL;
  /** Adds authentication per attempt: {@link bearerToken} locally, {@link sigv4Signer} on AWS. @default none */
  signer?: RequestSigner;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default the system clock */
  clock?: Clock;
  /** @default Math.random */
  random?: RandomSource;
  /** Spacing of retries. @default {@link DEFAULT_BACKOFF} (100 ms doubling to 5 s, full jitter) */
  backoff?: Partial<BackoffPolicy>;
  /** Spacing of `waitFor` polls. @default 250 ms doubling to 5 s, full jitter */
  pollBackoff?: Partial<BackoffPolicy>;
  /** Total time one method may spend, retries and waits included, ms. @default 60000 */
  deadlineMs?: number;
  /**
   * Longest single request, ms. A synchronous call may legitimately take the server's whole
   * `TOOL_LEDGER_SYNC_WAIT_MS` (25 s). @default 30000
   */
  attemptTimeoutMs?: number;
  /**
   * What to do when nothing listens at the endpoint (connection refused, no such host). An agent keeps
   * retrying until the deadline, since a restarting ledger comes back; an interactive tool such as the
   * operators' CLI says so at once (`ToolLedgerError` with code `unreachable`) instead of retrying in
   * silence. A port fetch refuses to use (`bad port`, e.g. 1 or 6000) throws `unreachable` at once
   * either way: no retry can send to it. @default 'retry'
   */
  onUnreachable?: 'retry' | 'fail';
}

/** One intended action. */
export interface CallInput {
  /** The action's identity: the same on every retry, worker restart and model turn (see `operationIdFor`). */
  operationId: string;
  /** Tool name as the ledger knows it (`webhook.post`). */
  tool: string;
  /** JSON arguments; serialized once, so every attempt sends the same bytes. */
  arguments: unknown;
  /** Recorded with the operation for logs and listing. */
  agentRunId?: string;
  /** Send `Prefer: respond-async`: reserve as `queued` and answer 202 at once. @default false */
  async?: boolean;
  /** Overrides the client's total deadline for this call, ms. */
  deadlineMs?: number;
  /** Cancels waiting (the operation itself is not cancelled: it keeps its ID and may still run). */
  signal?: AbortSignal;
}

/** What `call` returns. */
export interface CallOutcome {
  /** What it came to: `failed` is a terminal failure although the HTTP status was 201. */
  outcome: CallResultKind;
  /** The operation as the server reported it; `operation.state` may be non-terminal (202). */
  operation: Operation;
  /** True when this request did not run the effect: an earlier attempt or request did. */
  replayed: boolean;
  /** HTTP status of the final answer: 201 terminal, 202 accepted but not settled. */
  status: number;
  /** The server's `Retry-After`, ms, when it sent one (a hint for when to poll). */
  retryAfterMs?: number;
  /** Requests sent for this call. */
  attempts: number;
}

/** Options of {@link ToolLedgerClient.waitFor}. */
export interface WaitOptions {
  /** Give up after this long, ms. @default the client's `deadlineMs` */
  timeoutMs?: number;
  /** States to stop at. @default the terminal states (succeeded, failed_terminal, rejected) */
  until?: Iterable<OperationState>;
  /** Cancels waiting. */
  signal?: AbortSignal;
  /**
   * Keep polling while the operation does not exist yet (404): for operations sent through the work
   * queue, whose record appears only when the executor takes the message. @default false
   */
  waitForCreation?: boolean;
}

/** Options of {@link ToolLedgerClient.waitForEvent}. */
export interface WaitForEventOptions extends WaitOptions {
  /**
   * The queue the ledger's completion events arrive on: local mode's events queue, or on AWS an SQS
   * queue that an EventBridge rule on the ledger's bus targets (`sqsEventQueue` from
   * `@tool-ledger/client/sqs` builds one from an `SQSClient` and the queue URL).
   */
  events: EventQueue;
  /** The operation's tenant. @default the tenant of the client's credentials (`GET /v1/identity`, asked once per client) */
  tenant?: string;
}

/** An operator's decision on an uncertain operation (the tool-ledger contract, §5, resolution route). */
export interface Resolution {
  outcome: 'applied' | 'not_applied' | 'failed';
  /** The result to store when `applied`. */
  result?: unknown;
  /**
   * The `attempt` of the operation you checked (required): the resolution applies only while the
   * record is still at it, so a resolution retried after its `not_applied` started the next attempt is
   * refused (`state_changed`) instead of starting yet another one.
   */
  attempt: number;
}

/** Filters of {@link ToolLedgerClient.list}. */
export interface ListOptions {
  /**
   * One state, several, `'unresolved'` (the default: every state that is not terminal, the
   * reconciliation queue) or `'all'` (every state, terminal included).
   */
  state?: OperationState | readonly OperationState[] | 'unresolved' | 'all';
  /** Only operations of this tool. */
  tool?: string;
  /** Only operations created at or after this time (a `Date`, or RFC 3339 with a zone). */
  since?: Date | string;
  /** Only operations created before this time. */
  until?: Date | string;
  limit?: number;
  cursor?: string;
}

/** Statuses whose answer may differ on a later try; the ledger's keys make re-sending safe. */
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/**
 * The agent-side client of the tool-ledger HTTP API.
 *
 * `call` is safe to retry by construction: the operation ID and the serialized body are fixed before
 * the first attempt; transport errors, lost responses, in-progress 409s and retryable 503s are retried
 * with exponential backoff and full jitter (never sooner than `Retry-After`) until the total deadline.
 * Outcomes that are accepted but not settled (`queued`, `awaiting_approval`, `uncertain`,
 * `needs_reconciliation`) come back as values to `waitFor`, not as errors.
 *
 * ```
 * call ──POST──x (lost) ── backoff ──POST (same key, same bytes)──▶ 201 replayed: true
 *      ──POST──▶ 409 in progress ── Retry-After ──POST──▶ 201
 *      ──POST──▶ 202 uncertain ──▶ outcome ── waitFor ──GET…GET──▶ succeeded (reconciled)
 * ```
 *
 * @example
 * ```ts
 * const client = new ToolLedgerClient({ endpoint: 'http://127.0.0.1:3000', signer: bearerToken(process.env.TOKEN!) });
 * const id = operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 });
 * let { operation } = await client.call({ operationId: id, tool: 'webhook.post', arguments: { url, json } });
 * if (operation.state !== 'succeeded') operation = await client.waitFor(id);
 * ```
 */
export class ToolLedgerClient {
  private readonly endpoint: URL;
  private readonly signer: RequestSigner | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly clock: Clock;
  private readonly random: RandomSource;
  private readonly backoff: BackoffPolicy;
  private readonly pollBackoff: BackoffPolicy;
  private tenant: Promise<string> | undefined;
  private readonly deadlineMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly failWhenUnreachable: boolean;

  constructor(options: ToolLedgerClientOptions) {
    this.endpoint = new URL(options.endpoint);
    this.signer = options.signer;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.pollBackoff = { baseMs: 250, maxMs: 5_000, ...options.pollBackoff };
    this.deadlineMs = options.deadlineMs ?? 60_000;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 30_000;
    this.failWhenUnreachable = options.onUnreachable === 'fail';
  }

  /**
   * Runs a tool call at most once: `POST /v1/operations` with `Idempotency-Key: "<operationId>"`.
   *
   * @throws IdempotencyConflictError (422) when the ID was first used with other arguments.
   * @throws ToolLedgerRequestError for other refusals (validation, unknown tool, auth).
   * @throws DeadlineExceededError when retries did not get an answer in time (call again with the same ID).
   * @example
   * ```ts
   * const { operation, replayed } = await client.call({ operationId, tool: 'workspace.write_file',
   *   arguments: { path: 'notes.md', content: 'hi' } });
   * ```
   */
  async call(input: CallInput): Promise<CallOutcome> {
    assertOperationId(input.operationId);
    if (input.arguments === undefined) throw new TypeError('arguments are required (use {} for none)');
    return toolCallSpan(input.tool, input.operationId, () => this.submit(input));
  }

  private async submit(input: CallInput): Promise<CallOutcome> {
    const payload: Record<string, unknown> = { tool: input.tool, arguments: input.arguments };
    if (input.agentRunId !== undefined) payload.agent_run_id = input.agentRunId;
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = { 'idempotency-key': formatIdempotencyKey(input.operationId) };
    if (input.async) headers.prefer = 'respond-async';
    const { response, attempts } = await this.send({
      method: 'POST',
      path: '/v1/operations',
      headers,
      body,
      rule: 'operation',
      operationId: input.operationId,
      deadlineMs: input.deadlineMs,
      signal: input.signal,
    });
    const operation = parseOperation(response);
    const replayedHeader = response.headers.get('idempotent-replayed')?.trim().toLowerCase();
    const outcome: CallOutcome = {
      outcome: callResultKind(operation.state),
      operation,
      replayed: operation.replayed === true || replayedHeader === 'true' || replayedHeader === '?1',
      status: response.status,
      attempts,
    };
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.clock.now());
    if (retryAfterMs !== undefined) outcome.retryAfterMs = retryAfterMs;
    return outcome;
  }

  /**
   * Runs an effect that lives in your process (a framework's tool, a workflow step, a call to a service
   * you own) at most once under the ledger: claims the operation, runs `execute(ctx)` with
   * `ctx.downstreamKey`, `ctx.attempt` and an `AbortSignal`, keeps the claim's lease alive and aborts
   * the signal if the claim is lost, records how it ended (a throw is classified as tools' throws are:
   * `TerminalToolError`, `NotAppliedError`, anything else unknown), and returns the outcome. A repeat
   * with the same ID returns the stored outcome without calling `execute`; an unknown outcome is settled
   * by your `reconcile`; an operation waiting for approval, for an operator, or claimed elsewhere is
   * reported (or, with `wait`, waited on) and never executed.
   *
   * @throws IdempotencyConflictError (422) when the ID was first used with other arguments; nothing ran.
   * @throws ToolLedgerRequestError for other refusals; nothing ran.
   * @throws DeadlineExceededError when the claim got no answer in time (run again with the same ID).
   * @throws OutcomeNotRecordedError when the effect ran but its outcome got no answer in time.
   * @example
   * ```ts
   * const { outcome, result, model } = await ledger.run({
   *   operationId: operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 }),
   *   tool: 'billing.refund',
   *   arguments: { invoice: 'in_123', cents: 500 },
   *   execute: (ctx) => stripe.refunds.create({ charge, amount: 500 }, { idempotencyKey: ctx.downstreamKey }),
   * });
   * ```
   */
  run<T>(input: RunInput<T>): Promise<RunOutcome> {
    return toolCallSpan(input.tool, input.operationId, () => this.runInSpan(input));
  }

  private runInSpan<T>(input: RunInput<T>): Promise<RunOutcome> {
    return runOperation(
      {
        send: (spec) => this.send(spec),
        waitFor: (operationId, options) => this.waitFor(operationId, options),
        clock: this.clock,
        random: this.random,
        backoff: this.backoff,
        deadlineMs: this.deadlineMs,
      },
      input,
    );
  }

  /**
   * Polls `GET /v1/operations/{id}` with backoff until the operation reaches one of `until` (by
   * default a terminal state), e.g. to follow an `uncertain` outcome to what the reconciler decided.
   *
   * @throws WaitTimeoutError with the last state seen when time runs out.
   * @example
   * ```ts
   * const done = await client.waitFor(id, { timeoutMs: 30_000 });
   * const parked = await client.waitFor(id, { until: ['succeeded', 'failed_terminal', 'rejected', 'needs_reconciliation'] });
   * ```
   */
  async waitFor(operationId: string, options: WaitOptions = {}): Promise<Operation> {
    assertOperationId(operationId);
    const until = new Set<OperationState>(options.until ?? TERMINAL_STATES);
    const deadline = this.clock.now() + (options.timeoutMs ?? this.deadlineMs);
    let last: Operation | undefined;
    for (let poll = 0; ; poll++) {
      const remaining = deadline - this.clock.now();
      if (remaining <= 0) throw new WaitTimeoutError(last);
      let response: RawResponse;
      try {
        ({ response } = await this.send({
          method: 'GET',
          path: operationPath(operationId),
          rule: 'plain',
          deadlineMs: remaining,
          signal: options.signal,
        }));
      } catch (error) {
        if (error instanceof DeadlineExceededError) throw new WaitTimeoutError(last, error);
        if (!(options.waitForCreation && error instanceof ToolLedgerRequestError && error.status === 404))
          throw error;
        const delay = backoffDelay(this.pollBackoff, poll, this.random);
        if (this.clock.now() + delay >= deadline) throw new WaitTimeoutError(last);
        await this.clock.sleep(delay, options.signal);
        continue;
      }
      last = parseOperation(response);
      if (until.has(last.state)) return last;
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.clock.now());
      const delay = backoffDelay(this.pollBackoff, poll, this.random, retryAfterMs);
      if (this.clock.now() + delay >= deadline) throw new WaitTimeoutError(last);
      await this.clock.sleep(delay, options.signal);
    }
  }

  /**
   * Waits for the operation by its completion events instead of by polling: reads the operation once
   * (an event sent before the wait began, or taken by someone else, is not missed), then reads
   * `options.events` until an event of this tenant and operation announces one of `until`, and reads
   * the operation once more to return it with its result.
   *
   * Only the events of this operation are deleted from the queue (each event ID is handled once,
   * duplicates included); other messages are left untouched and reappear for their readers after the
   * queue's visibility timeout. A queue read by one waiter at a time wastes nothing; give concurrent
   * waiters a queue each (an EventBridge rule can filter on `detail.tenant` or `detail.agent_run_id`).
   *
   *     wait ──GET──▶ not there yet ──receive…receive──▶ event ⟨tenant, id, state ∈ until⟩ ──GET──▶ operation
   *
   * @throws WaitTimeoutError with the last state seen when time runs out.
   * @example
   * ```ts
   * import { sqsEventQueue } from '@tool-ledger/client/sqs';
   * const events = sqsEventQueue({ queueUrl: eventsQueueUrl, sqs });
   * await client.call({ operationId: id, tool: 'webhook.post', arguments, async: true });
   * const done = await client.waitForEvent(id, { events, timeoutMs: 60_000 });
   * ```
   */
  async waitForEvent(operationId: string, options: WaitForEventOptions): Promise<Operation> {
    assertOperationId(operationId);
    const until = new Set<OperationState>(options.until ?? TERMINAL_STATES);
    const deadline = this.clock.now() + (options.timeoutMs ?? this.deadlineMs);
    let last = await this.readWithin(operationId, deadline, options);
    if (last !== undefined && until.has(last.state)) return last;
    const tenant = options.tenant ?? (await this.ownTenant());
    const handled = new Set<string>();
    for (;;) {
      const remaining = deadline - this.clock.now();
      if (remaining <= 0) throw new WaitTimeoutError(last);
      const messages = await options.events.receive({ waitMs: remaining, signal: options.signal });
      let announced = false;
      for (const message of messages) {
        const event = completionEventOfBody(message.body);
        if (event === undefined || event.tenant !== tenant || event.operation_id !== operationId) continue;
        await message.delete();
        if (handled.has(event.event_id)) continue;
        handled.add(event.event_id);
        if (until.has(event.state)) announced = true;
      }
      if (!announced) continue;
      last = await this.readWithin(operationId, deadline, options);
      // Past the announced state already (an approval, then a run): the next event says where it went.
      if (last !== undefined && until.has(last.state)) return last;
    }
  }

  /** The tenant of these credentials, asked once per client (the ledger shows a caller only its own). */
  private ownTenant(): Promise<string> {
    this.tenant ??= this.identity().then((identity) => identity.tenant);
    this.tenant.catch(() => {
      this.tenant = undefined;
    });
    return this.tenant;
  }

  /** One read of the operation within the wait's deadline: undefined if it does not exist yet and may. */
  private async readWithin(
    operationId: string,
    deadline: number,
    options: WaitOptions,
  ): Promise<Operation | undefined> {
    try {
      const { response } = await this.send({
        method: 'GET',
        path: operationPath(operationId),
        rule: 'plain',
        deadlineMs: Math.max(1, deadline - this.clock.now()),
        signal: options.signal,
      });
      return parseOperation(response);
    } catch (error) {
      if (error instanceof DeadlineExceededError) throw new WaitTimeoutError(undefined, error);
      if (options.waitForCreation && error instanceof ToolLedgerRequestError && error.status === 404)
        return undefined;
      throw error;
    }
  }

  /**
   * The operation in any state (`GET /v1/operations/{id}`); `includeArguments` needs the approver or
   * operator role.
   *
   * @example
   * ```ts
   * const op = await client.get('run-42:s3:c0');
   * ```
   */
  async get(
    operationId: string,
    options: { includeArguments?: boolean; signal?: AbortSignal } = {},
  ): Promise<Operation> {
    assertOperationId(operationId);
    const { response } = await this.send({
      method: 'GET',
      path: operationPath(operationId),
      query: { include: options.includeArguments ? 'arguments' : undefined },
      rule: 'plain',
      signal: options.signal,
    });
    return parseOperation(response);
  }

  /**
   * Approves an `awaiting_approval` operation, bound to the digest the approver saw (so a different
   * set of arguments can never ride on the approval). Repeating the same decision is harmless.
   *
   * @example
   * ```ts
   * const op = await approverClient.get(id, { includeArguments: true });
   * await approverClient.approve(id, op.arguments_digest);
   * ```
   */
  approve(operationId: string, argumentsDigest: string): Promise<Operation> {
    return this.decide(operationId, 'approve', argumentsDigest);
  }

  /**
   * Rejects an `awaiting_approval` operation; it becomes `rejected` and never runs.
   *
   * @example
   * ```ts
   * await approverClient.reject(id, op.arguments_digest);
   * ```
   */
  reject(operationId: string, argumentsDigest: string): Promise<Operation> {
    return this.decide(operationId, 'reject', argumentsDigest);
  }

  /**
   * An operator's resolution of an `uncertain` or `needs_reconciliation` operation, after checking
   * the target by hand. Pass the `attempt` of the operation you read: a resolution is a verdict on that
   * attempt, and a retry of this call (after a lost response) can then never resolve a later one.
   *
   * @example
   * ```ts
   * const op = await operatorClient.get(id);
   * await operatorClient.resolve(id, { outcome: 'applied', result: { checked: true }, attempt: op.attempt });
   * ```
   */
  async resolve(operationId: string, resolution: Resolution): Promise<Operation> {
    assertOperationId(operationId);
    const { response } = await this.send({
      method: 'POST',
      path: `${operationPath(operationId)}/resolution`,
      body: JSON.stringify(resolution),
      rule: 'plain',
    });
    return parseOperation(response);
  }

  /**
   * The tenant's operations, newest first (operator role): by default its unresolved ones; any
   * state (`state: 'all'`), a tool and a creation window through the options.
   *
   * @example
   * ```ts
   * for (let page = await client.list({ state: 'needs_reconciliation' }); ; ) {
   *   handle(page.operations);
   *   if (!page.cursor) break;
   *   page = await client.list({ state: 'needs_reconciliation', cursor: page.cursor });
   * }
   * ```
   */
  async list(options: ListOptions = {}): Promise<OperationPage> {
    const { response } = await this.send({
      method: 'GET',
      path: '/v1/operations',
      query: {
        state:
          typeof options.state === 'string' || options.state === undefined
            ? options.state
            : options.state.join(','),
        tool: options.tool,
        since: options.since instanceof Date ? options.since.toISOString() : options.since,
        until: options.until instanceof Date ? options.until.toISOString() : options.until,
        limit: options.limit === undefined ? undefined : String(options.limit),
        cursor: options.cursor,
      },
      rule: 'plain',
    });
    const body = parseJson(response);
    const operations = isRecord(body) && Array.isArray(body.operations) ? body.operations : undefined;
    if (!operations)
      throw new UnexpectedResponseError(response.status, 'the list response has no operations array');
    const page: OperationPage = { operations: operations as Operation[] };
    const cursor = isRecord(body) ? (body.cursor ?? body.next_cursor) : undefined;
    if (typeof cursor === 'string' && cursor.length > 0) page.cursor = cursor;
    return page;
  }

  /**
   * The deployment's tools with their JSON Schemas (`GET /v1/tools`), ready for
   * `toChatCompletionTools` / `toAnthropicTools`.
   *
   * @example
   * ```ts
   * const tools = await client.tools();
   * ```
   */
  async tools(): Promise<ToolDescription[]> {
    const { response } = await this.send({ method: 'GET', path: '/v1/tools', rule: 'plain' });
    const body = parseJson(response);
    const tools = Array.isArray(body)
      ? body
      : isRecord(body) && Array.isArray(body.tools)
        ? body.tools
        : undefined;
    if (!tools) throw new UnexpectedResponseError(response.status, 'the tools response has no tools array');
    return tools as ToolDescription[];
  }

  /**
   * Who the credentials are to the ledger: tenant, principal label and roles (`GET /v1/identity`), so
   * a client can offer only the actions its caller may take.
   */
  async identity(): Promise<Identity> {
    const { response } = await this.send({ method: 'GET', path: '/v1/identity', rule: 'plain' });
    const body = parseJson(response);
    if (!isRecord(body) || typeof body.tenant !== 'string' || !Array.isArray(body.roles)) {
      throw new UnexpectedResponseError(response.status, 'the identity response has no tenant and roles');
    }
    return body as unknown as Identity;
  }

  private async decide(
    operationId: string,
    decision: 'approve' | 'reject',
    digest: string,
  ): Promise<Operation> {
    assertOperationId(operationId);
    const { response } = await this.send({
      method: 'POST',
      path: `${operationPath(operationId)}/approval`,
      body: JSON.stringify({ decision, arguments_digest: digest }),
      rule: 'plain',
    });
    return parseOperation(response);
  }

  /**
   * Sends one logical request, retrying what a retry can change, until the deadline. The body and
   * headers are fixed by the caller before the loop; only the signature (which carries a time) is
   * renewed per attempt.
   */
  private async send(spec: RequestSpec): Promise<{ response: RawResponse; attempts: number }> {
    const url = this.url(spec.path, spec.query);
    const deadline = this.clock.now() + (spec.deadlineMs ?? this.deadlineMs);
    const baseHeaders: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      ...traceHeaders(),
      ...spec.headers,
    };
    if (spec.body !== undefined) baseHeaders['content-type'] = 'application/json';
    let lastStatus: number | undefined;
    let lastOperation: Operation | undefined;
    let lastError: unknown;
    for (let attempt = 1; ; attempt++) {
      const remaining = deadline - this.clock.now();
      if (remaining <= 0) {
        throw new DeadlineExceededError({
          attempts: attempt - 1,
          lastStatus,
          lastOperation,
          cause: lastError,
        });
      }
      const headers = this.signer
        ? await this.signer.sign({ method: spec.method, url, headers: { ...baseHeaders }, body: spec.body })
        : baseHeaders;
      const timeout = AbortSignal.timeout(Math.max(1, Math.min(this.attemptTimeoutMs, remaining)));
      const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
      let response: RawResponse | undefined;
      try {
        const res = await this.fetchImpl(url, {
          method: spec.method,
          headers,
          body: spec.body,
          signal,
          redirect: 'manual',
        });
        // Reading the body belongs to the attempt: a connection reset mid-body is a lost response.
        response = { status: res.status, headers: res.headers, text: await res.text() };
      } catch (error) {
        if (spec.signal?.aborted) throw spec.signal.reason;
        if (!isTransportError(error)) throw error;
        if (isBlockedPort(error)) {
          // fetch never sends to this port, so no retry can change it, whatever onUnreachable says.
          throw new ToolLedgerError(
            'unreachable',
            `nothing can be sent to ${url.origin} (bad port: fetch refuses port ${url.port})`,
            { cause: error },
          );
        }
        const unreachable = this.failWhenUnreachable ? unreachableReason(error) : undefined;
        if (unreachable !== undefined) {
          throw new ToolLedgerError('unreachable', `nothing answers at ${url.origin} (${unreachable})`, {
            cause: error,
          });
        }
        lastError = error;
      }
      let retryAfterMs: number | undefined;
      if (response) {
        lastStatus = response.status;
        lastError = undefined;
        if (!isRetryable(response, spec.rule)) return { response: settle(response, spec), attempts: attempt };
        lastOperation = operationIn(response) ?? lastOperation;
        retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.clock.now());
      }
      const delay = backoffDelay(this.backoff, attempt - 1, this.random, retryAfterMs);
      if (this.clock.now() + delay >= deadline) {
        throw new DeadlineExceededError({ attempts: attempt, lastStatus, lastOperation, cause: lastError });
      }
      await this.clock.sleep(delay, spec.signal);
    }
  }

  private url(path: string, query?: Record<string, string | undefined>): URL {
    const url = new URL(this.endpoint);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
    url.search = '';
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    return url;
  }
}

function isRetryable(response: RawResponse, rule: RetryRule): boolean {
  if (RETRYABLE_STATUSES.has(response.status)) return true;
  // On the operations route a 409 means a worker holds a live lease: the answer will change. On the
  // approval and resolution routes a 409 is a decision (state_changed, approval_mismatch).
  if (response.status === 409 && rule === 'operation') {
    const problem = parseProblem(response);
    return problem.code === 'operation_in_progress';
  }
  return false;
}

/** Turns a final answer into the value or the typed error the caller gets. */
function settle(response: RawResponse, spec: RequestSpec): RawResponse {
  if (response.status >= 200 && response.status < 300) return response;
  if (response.status >= 300 && response.status < 400) {
    throw new UnexpectedResponseError(
      response.status,
      'tool-ledger answered with a redirect, which is never followed',
    );
  }
  const problem = parseProblem(response);
  if (
    response.status === 422 &&
    problem.code === 'idempotency_key_reused' &&
    spec.operationId !== undefined
  ) {
    throw new IdempotencyConflictError(spec.operationId, problem);
  }
  throw new ToolLedgerRequestError(response.status, problem);
}

/**
 * Errors of the request itself rather than of the code: fetch rejects with a TypeError for network
 * failures (resets, refused connections, closed sockets) and an abort/timeout DOMException when an
 * attempt's time runs out. Body read failures surface the same way.
 */
function isTransportError(error: unknown): boolean {
  if (error instanceof TypeError) return true;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return true;
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string';
}

/** Errors that mean nothing listens at the endpoint, so that no request was ever received. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The system error code when a request failed because nothing listens at the endpoint. */
function unreachableReason(error: unknown): string | undefined {
  const cause = error instanceof Error ? error.cause : undefined;
  for (const candidate of [cause, error]) {
    if (isRecord(candidate) && typeof candidate.code === 'string' && UNREACHABLE_CODES.has(candidate.code)) {
      return candidate.code;
    }
  }
  return undefined;
}

/**
 * fetch's refusal of a port on its blocklist (1, 7, 9, …, 6000, …; the Fetch standard's "bad port"): the
 * request is never sent, now or on any retry. Node's fetch reports it as a `TypeError` whose cause says
 * `bad port`, with no system error code.
 */
function isBlockedPort(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error && cause.message === 'bad port';
}

const FALLBACK_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'throttled',
};

/** The problem document, or a stand-in with a code derived from the status (e.g. API Gateway's own 403). */
function parseProblem(response: RawResponse): Problem {
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    body = undefined;
  }
  if (isRecord(body) && typeof body.code === 'string') return body as Problem;
  return { code: FALLBACK_CODES[response.status] ?? `http_${response.status}`, status: response.status };
}

/** The operation a retryable answer carries: the body itself (503) or the problem's `operation` (409). */
function operationIn(response: RawResponse): Operation | undefined {
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    return undefined;
  }
  const candidate = isRecord(body) && isRecord(body.operation) ? body.operation : body;
  return isRecord(candidate) &&
    typeof candidate.operation_id === 'string' &&
    typeof candidate.state === 'string'
    ? (candidate as Operation)
    : undefined;
}
