import { createHash, randomBytes } from 'node:crypto';
import { envelopeForOperation, type ModelToolResult, toModelToolResult } from './adapters/result-envelope';
import {
  type CallResultKind,
  type Claim,
  callResultKind,
  isTerminalState,
  type Operation,
  type OperationState,
  type Problem,
} from './api-types';
import { type BackoffPolicy, backoffDelay } from './backoff';
import type { Clock, RandomSource } from './clock';
import {
  ClaimLostError,
  DeadlineExceededError,
  OutcomeNotRecordedError,
  ToolLedgerRequestError,
  UnexpectedResponseError,
  WaitTimeoutError,
} from './errors';
import { assertOperationId, formatIdempotencyKey } from './operation-id';
import { outcomeKindOf } from './outcome-errors';
import type { WaitOptions } from './tool-ledger-client';
import { isRecord, operationPath, parseOperation, type RawResponse, type RequestSpec } from './wire';

/**
 * `ledger.run`: an effect that runs in the caller's own process (a framework's tool, a workflow step, a
 * call to a service the agent owns) under the ledger's guarantees. This file owns the whole protocol of
 * a caller-executed operation, so that a framework adapter maps its tool shape onto `run` and nothing
 * else:
 *
 * ```
 * claim ──▶ 201 stored outcome ─────────────────────────────────────────────▶ return (replayed)
 *       ──▶ 200 claim ── execute(ctx) ─┬─ heartbeat every lease/3 ──▶ 409: abort ctx.signal
 *                                      └─ returns / throws ── outcome ──▶ succeeded, failed_terminal: return
 *                                                                    ──▶ failed_retryable: claim the next attempt
 *                                                                    ──▶ uncertain: reconcile ─┐
 *       ──▶ 202 uncertain, needs_reconciliation ── reconcile(ctx) ── verdict ◀──────────────────┘
 *                   applied ──▶ succeeded: return · not_applied ──▶ claim the next attempt · unknown ──▶ report
 *       ──▶ 202 awaiting_approval, 409 held elsewhere ──▶ report, or with `wait`: poll until it moves, claim again
 * ```
 *
 * Every request is retried with the same body after a lost answer: the claim carries a `claim_id`
 * made once per attempt it intends to run (so the retry gets the same claim back), the outcome and the
 * verdict carry the claim's token or attempt (so a repeat is answered with the same record).
 */

/** What `execute` and `reconcile` receive. */
export interface RunContext {
  operationId: string;
  /** The tool name the operation was recorded under. */
  tool: string;
  /** The attempt this claim runs (from 1), or, in `reconcile`, the attempt that may have applied. */
  attempt: number;
  /**
   * The key to send to a target with its own idempotency (an `Idempotency-Key` header, a Stripe key, a
   * client token): the same for every attempt of this operation, new for a later operation that reuses
   * the ID after the record expired. Anything kept per operation belongs under this key, not the ID.
   */
  downstreamKey: string;
  /**
   * Aborted when the claim is lost (a heartbeat refused or unanswered before the lease ends: the reason
   * is a {@link ClaimLostError}) or when `run`'s own `signal` aborts. Pass it to every call the effect
   * makes: once the claim is gone, the ledger may let another attempt run.
   */
  signal: AbortSignal;
}

/** `reconcile`'s answer: did the effect of this attempt happen? (the same verdicts as a tool's `reconcile`) */
export type ReconcileVerdict<T = unknown> =
  | { status: 'applied'; result: T }
  | { status: 'not_applied' }
  | { status: 'unknown' };

/** Waiting on states that need someone else: an approver, an operator, another claimant. */
export interface RunWaitOptions {
  /** Give up waiting after this long in all, ms (then `run` reports the state). @default the client's `deadlineMs` */
  timeoutMs?: number;
}

/** One effect to run at most once. */
export interface RunInput<T = unknown> {
  /** The action's identity: the same on every retry, restart and replay (`operationIdFor`, `operationIdFrom`). */
  operationId: string;
  /** The tool's name, `[a-z][a-z0-9_.-]{0,63}`; part of the digest. */
  tool: string;
  /**
   * The arguments, after your own validation and normalisation (the ledger has no schema for a tool it
   * does not run). Serialized once: every request sends the same bytes, and the same ID with other
   * arguments is a conflict.
   */
  arguments: unknown;
  /**
   * Performs the effect, at most once per claim. Return the result (sent whole after `sanitizeResult`
   * when its JSON is at most {@link MAX_RESULT_BYTES}, what a request can always carry on AWS; a larger
   * one is sent as `{truncated, size, sha256}`), or throw
   * `TerminalToolError` (known failure), `NotAppliedError` (known not started) or anything else
   * (outcome unknown). Honour `ctx.signal`.
   */
  execute(ctx: RunContext): Promise<T> | T;
  /**
   * Asks the target whether the effect of `ctx.attempt` happened, when the ledger does not know
   * (the answer was lost, the caller crashed between effect and outcome, the effect threw an unknown
   * error): `applied` records the result, `not_applied` lets `run` claim the next attempt with the same
   * downstream key, `unknown` (or a throw) leaves it to the reconciler and an operator. Without it an
   * `uncertain` operation is reported (or waited on).
   */
  reconcile?(ctx: RunContext): Promise<ReconcileVerdict<T>> | ReconcileVerdict<T>;
  /** How long a claim holds without a heartbeat, seconds (1 to 900). Heartbeats go every third of it. @default 60 */
  leaseSeconds?: number;
  /** Hold the operation for a person's approval before anything runs. @default false */
  requiresApproval?: boolean;
  /**
   * The target dedupes on the downstream key, so an unknown outcome may simply be tried again (the
   * reconciler moves it to `failed_retryable`). @default false
   */
  downstreamIdempotent?: boolean;
  /** Attempts in all (1 to 10); the deployment may cap it. @default 3 on the server */
  maxAttempts?: number;
  /** Makes the result safe to store and show (drop secrets, keep what the model needs). A throw stores `null`. */
  sanitizeResult?(result: T): unknown;
  /** Recorded with the operation for logs and the listing. */
  agentRunId?: string;
  /**
   * On `awaiting_approval`, a claim held elsewhere, or an `uncertain` / `needs_reconciliation` outcome
   * `reconcile` could not settle: `false` reports the state at once; `true` or options poll until the
   * state moves, then claim again. @default false
   */
  wait?: boolean | RunWaitOptions;
  /**
   * Cancels waiting and aborts `ctx.signal`. It never cancels recording an outcome: once `execute` has
   * run, `run` still tells the ledger how it ended.
   */
  signal?: AbortSignal;
}

/** What `run` came to: the same shape family as `call`'s outcome. */
export interface RunOutcome {
  /** `succeeded`, `failed` (terminal), `rejected` (approval denied), or `not_settled` (see `operation.state`). */
  outcome: CallResultKind;
  /** The operation as the ledger last reported it. */
  operation: Operation;
  /** True when this run did not execute the effect: the outcome is an earlier run's. */
  replayed: boolean;
  /** The stored result (`operation.result`) when `succeeded`, else `undefined`. */
  result: unknown;
  /** How many times this run called `execute` (0 on a replay; more than 1 after not-applied attempts). */
  executions: number;
  /** What to tell a model: the same envelope and text the model adapters produce. */
  model: ModelToolResult;
}

/** What `run` needs from the client: one logical request with its retries, polling, time. */
export interface RunTransport {
  send(spec: RequestSpec): Promise<{ response: RawResponse; attempts: number }>;
  waitFor(operationId: string, options: WaitOptions): Promise<Operation>;
  clock: Clock;
  random: RandomSource;
  backoff: BackoffPolicy;
  deadlineMs: number;
}

/**
 * Largest result sent whole, UTF-8 bytes of its JSON. The ledger keeps results of up to 6 MB, but on
 * AWS the outcome travels inside a Lambda invocation of at most 6 MB, where the request's escaping can
 * double a JSON text (quotes, backslashes, non-ASCII characters): half of that always fits. A ledger
 * that answers 413 (a release whose outcome bodies were bounded at 256 KiB) gets
 * `{truncated, size, sha256}` instead.
 */
export const MAX_RESULT_BYTES = 3_000_000;

/** Largest stored error message, UTF-8 bytes. */
const MAX_MESSAGE_BYTES = 1024;

const DEFAULT_LEASE_SECONDS = 60;

const CODE_PATTERN = /^[a-z0-9_.-]{1,64}$/;

/** Stored for an unknown outcome instead of the thrown message, which may carry anything. */
const UNKNOWN_OUTCOME_MESSAGE = 'the outcome of the attempt is unknown';

const ALL_STATES: readonly OperationState[] = [
  'awaiting_approval',
  'queued',
  'pending',
  'succeeded',
  'failed_terminal',
  'failed_retryable',
  'uncertain',
  'needs_reconciliation',
  'rejected',
];

/** An outcome as `run` sends it to `POST /v1/operations/{id}/outcome`. */
interface LocalOutcome {
  outcome: 'succeeded' | 'failed_terminal' | 'failed_retryable' | 'uncertain';
  result?: unknown;
  error?: { code: string; message: string };
}

/** A claim as `run` holds it: the ledger's answer, when the request was first sent (local clock), the lease. */
interface HeldClaim {
  claim: Claim;
  operation: Operation;
  sentAt: number;
  leaseMs: number;
}

/** The answer to a claim request. */
type ClaimAnswer = { kind: 'claimed'; held: HeldClaim } | { kind: 'reported'; operation: Operation };

/** Where an operation `run` is looking at came from, which decides what a `failed_retryable` means. */
type Seen = 'claim' | 'own_outcome' | 'own_verdict';

/**
 * Runs `input.execute` at most once per claim under the ledger's protocol and returns what the
 * operation came to (see the file's timeline). Bad input throws before anything is sent.
 *
 * @throws IdempotencyConflictError (422) when the ID was first used with other arguments; nothing ran.
 * @throws ToolLedgerRequestError for other refusals (`tool_executed_by_ledger`, `caller_tool_not_allowed`,
 * `validation_failed`, auth); nothing ran.
 * @throws DeadlineExceededError when a claim got no answer in time (run again with the same ID).
 * @throws OutcomeNotRecordedError when the effect ran but its outcome got no answer in time.
 */
export async function runOperation<T>(t: RunTransport, input: RunInput<T>): Promise<RunOutcome> {
  const body = claimBody(input);
  const leaseMs = (input.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000;
  const waitOptions =
    input.wait === undefined || input.wait === false ? undefined : input.wait === true ? {} : input.wait;
  const waitUntil = t.clock.now() + (waitOptions?.timeoutMs ?? t.deadlineMs);
  const reconciled = new Set<string>();
  let executions = 0;
  let retries = 0;

  for (;;) {
    const answer = await claim(t, input.operationId, body, leaseMs, input.signal);
    let operation: Operation;
    let seen: Seen = 'claim';
    if (answer.kind === 'claimed') {
      executions++;
      operation = await runAttempt(t, input, answer.held);
      seen = 'own_outcome';
    } else {
      operation = answer.operation;
    }

    if (
      (operation.state === 'uncertain' || operation.state === 'needs_reconciliation') &&
      input.reconcile !== undefined &&
      !reconciled.has(`${operation.attempt}/${operation.state}`)
    ) {
      reconciled.add(`${operation.attempt}/${operation.state}`);
      const after = await reconcileAttempt(t, input, operation);
      if (after !== undefined) {
        operation = after;
        seen = 'own_verdict';
      }
    }

    if (isTerminalState(operation.state)) return finish(operation, executions);
    if (operation.state === 'failed_retryable' && seen !== 'claim') {
      // Our own attempt or verdict left it retryable: claim the next attempt (same downstream key). A
      // not-applied attempt waits its backoff first; a not-applied verdict is about an old attempt.
      if (seen === 'own_outcome')
        await t.clock.sleep(backoffDelay(t.backoff, retries++, t.random), input.signal);
      continue;
    }
    if (waitOptions === undefined) return finish(operation, executions);
    const moved = await waitForChange(t, operation, waitUntil, input.signal);
    if (moved === undefined) return finish(operation, executions);
  }
}

/** The claim request's body, serialized once (the `claim_id` is added per claim). */
function claimBody<T>(input: RunInput<T>): Record<string, unknown> {
  assertOperationId(input.operationId);
  if (typeof input.tool !== 'string' || input.tool.length === 0)
    throw new TypeError('tool must be a non-empty string');
  if (typeof input.execute !== 'function') throw new TypeError('execute must be a function');
  if (input.reconcile !== undefined && typeof input.reconcile !== 'function') {
    throw new TypeError('reconcile, when given, must be a function');
  }
  if (input.arguments === undefined) throw new TypeError('arguments are required (use {} for none)');
  assertIntegerIn('leaseSeconds', input.leaseSeconds, 1, 900);
  assertIntegerIn('maxAttempts', input.maxAttempts, 1, 10);
  // One serialization: a later mutation of the caller's object cannot change what the retries send.
  const json = JSON.stringify(input.arguments);
  if (json === undefined) throw new TypeError('arguments must be JSON');
  const body: Record<string, unknown> = {
    tool: input.tool,
    arguments: JSON.parse(json),
    execution: 'caller',
    lease_seconds: input.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
  };
  if (input.requiresApproval !== undefined) body.requires_approval = input.requiresApproval;
  if (input.downstreamIdempotent !== undefined) body.downstream_idempotent = input.downstreamIdempotent;
  if (input.maxAttempts !== undefined) body.max_attempts = input.maxAttempts;
  if (input.agentRunId !== undefined) body.agent_run_id = input.agentRunId;
  return body;
}

function assertIntegerIn(name: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer from ${min} to ${max}`);
  }
}

/**
 * A claim ID: 192 random bits, made once per attempt `run` intends to run. A retry of the same claim
 * request (after a lost answer) carries it, so the ledger answers with the claim it already made.
 */
function newClaimId(): string {
  return randomBytes(24).toString('base64url');
}

/** `POST /v1/operations` with `execution: "caller"`: a claim (200) or the state to report. */
async function claim(
  t: RunTransport,
  operationId: string,
  base: Record<string, unknown>,
  requestedLeaseMs: number,
  signal: AbortSignal | undefined,
): Promise<ClaimAnswer> {
  const sentAt = t.clock.now();
  try {
    const { response } = await t.send({
      method: 'POST',
      path: '/v1/operations',
      headers: { 'idempotency-key': formatIdempotencyKey(operationId) },
      body: JSON.stringify({ ...base, claim_id: newClaimId() }),
      rule: 'plain',
      operationId,
      signal,
    });
    const operation = parseOperation(response);
    if (response.status !== 200) return { kind: 'reported', operation };
    const granted = parseClaim(response, operation);
    const leaseMs = grantedLeaseMs(response, granted, requestedLeaseMs);
    return { kind: 'claimed', held: { claim: granted, operation, sentAt, leaseMs } };
  } catch (error) {
    if (
      error instanceof ToolLedgerRequestError &&
      error.status === 409 &&
      error.code === 'operation_in_progress'
    ) {
      return { kind: 'reported', operation: await operationOf(t, operationId, error.problem) };
    }
    throw error;
  }
}

function parseClaim(response: RawResponse, operation: Operation): Claim {
  const claim = operation.claim;
  if (
    isRecord(claim) &&
    typeof claim.token === 'string' &&
    Number.isSafeInteger(claim.attempt) &&
    typeof claim.lease_expires_at === 'string' &&
    typeof claim.downstream_key === 'string'
  ) {
    return claim as unknown as Claim;
  }
  throw new UnexpectedResponseError(response.status, 'the claim answer carries no claim');
}

/**
 * One attempt: `execute` under a kept lease, its outcome classified and recorded. Returns the
 * operation as the ledger recorded it (or, when the attempt was superseded, as it now stands).
 */
async function runAttempt<T>(t: RunTransport, input: RunInput<T>, held: HeldClaim): Promise<Operation> {
  const { claim: granted } = held;
  const lost = new AbortController();
  const signal = input.signal ? AbortSignal.any([lost.signal, input.signal]) : lost.signal;
  const keeper = keepLease(t, input.operationId, held, (reason) => lost.abort(reason));
  let local: LocalOutcome;
  try {
    const value = await input.execute({
      operationId: input.operationId,
      tool: input.tool,
      attempt: granted.attempt,
      downstreamKey: granted.downstream_key,
      signal,
    });
    local = { outcome: 'succeeded', result: storedResult(value, input.sanitizeResult) };
  } catch (error) {
    local = classifyThrown(error, lost.signal, input.signal);
  } finally {
    await keeper.stop();
  }
  return recordOutcome(t, input.operationId, granted, local);
}

/**
 * The lease the ledger granted, ms. The record's policy fixes it at reservation, so an earlier request
 * may have reserved the operation with a shorter lease than this run asks for; the claim's
 * `lease_expires_at` against the answer's own `Date` (both the ledger's clock) says what it granted.
 * `Date` has one-second resolution, hence the second taken off; the lease asked for is the most.
 */
function grantedLeaseMs(response: RawResponse, granted: Claim, requestedMs: number): number {
  const answeredAt = Date.parse(response.headers.get('date') ?? '');
  const expiresAt = Date.parse(granted.lease_expires_at);
  if (!Number.isFinite(answeredAt) || !Number.isFinite(expiresAt)) return requestedMs;
  return Math.min(requestedMs, Math.max(1000, expiresAt - answeredAt - 1000));
}

/**
 * Keeps a claim alive while `execute` runs: `POST /lease` every third of the lease, each with a deadline
 * of the lease's end as this process can vouch for it (measured from when the claim or the last
 * answered heartbeat was sent, so no clock is compared with the ledger's). A refusal (409: the claim
 * was lost) or no answer before the lease ends calls `onLost`, once, and stops.
 *
 * ```
 * claim sent ─── lease/3 ──▶ heartbeat ──▶ 200: lease = sent + lease ─── lease/3 ──▶ heartbeat ──▶ 409 ──▶ onLost
 *                                                                                   (no answer by lease end ──▶ onLost)
 * ```
 */
function keepLease(
  t: RunTransport,
  operationId: string,
  held: HeldClaim,
  onLost: (reason: ClaimLostError) => void,
): { stop(): Promise<void> } {
  const stopped = new AbortController();
  const { claim: granted, leaseMs } = held;
  // No lease_seconds: each extension is the record's own lease, the one the claim was granted.
  const body = JSON.stringify({ token: granted.token });
  const loop = (async () => {
    let lastSent = held.sentAt;
    for (;;) {
      await t.clock.sleep(Math.max(0, lastSent + leaseMs / 3 - t.clock.now()), stopped.signal);
      const sent = t.clock.now();
      const remaining = lastSent + leaseMs - sent;
      if (remaining <= 0) {
        onLost(new ClaimLostError('lease_expired', operationId, granted.attempt));
        return;
      }
      try {
        await t.send({
          method: 'POST',
          path: `${operationPath(operationId)}/lease`,
          body,
          rule: 'plain',
          deadlineMs: remaining,
          signal: stopped.signal,
        });
        lastSent = sent;
      } catch (error) {
        if (stopped.signal.aborted) return;
        const code = error instanceof DeadlineExceededError ? 'lease_expired' : 'claim_lost';
        onLost(new ClaimLostError(code, operationId, granted.attempt, error));
        return;
      }
    }
  })().catch(() => {
    // Only the stop signal ends a sleep early; nothing else is thrown past the loop's own catch.
  });
  return {
    async stop() {
      stopped.abort();
      await loop;
    },
  };
}

/** Classifies what `execute` threw, as the executor classifies a tool's throw (the contract, §4). */
function classifyThrown(error: unknown, lost: AbortSignal, own: AbortSignal | undefined): LocalOutcome {
  const kind = outcomeKindOf(error);
  const authored = error as { code?: unknown; message?: unknown };
  if (kind === 'terminal' || kind === 'not_applied') {
    return {
      outcome: kind === 'terminal' ? 'failed_terminal' : 'failed_retryable',
      error: {
        code: storedCode(authored.code, kind === 'terminal' ? 'terminal' : 'not_applied'),
        message: boundedMessage(typeof authored.message === 'string' ? authored.message : ''),
      },
    };
  }
  let code = 'unknown_error';
  if (kind === 'uncertain') code = storedCode(authored.code, 'unknown_error');
  else if (lost.aborted && lost.reason instanceof ClaimLostError) code = lost.reason.code;
  else if (own?.aborted) code = 'aborted';
  return { outcome: 'uncertain', error: { code, message: UNKNOWN_OUTCOME_MESSAGE } };
}

/** An author's code as the ledger stores codes: `[a-z0-9_.-]{1,64}`. */
function storedCode(raw: unknown, fallback: string): string {
  if (typeof raw !== 'string') return fallback;
  if (CODE_PATTERN.test(raw)) return raw;
  const code = raw
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '_')
    .slice(0, 64);
  return code === '' ? fallback : code;
}

/** A message cut to the stored bound, on a character boundary. */
function boundedMessage(message: string): string {
  if (Buffer.byteLength(message, 'utf8') <= MAX_MESSAGE_BYTES) return message;
  let out = '';
  let bytes = 0;
  for (const ch of message) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (bytes + size > MAX_MESSAGE_BYTES - 3) break;
    out += ch;
    bytes += size;
  }
  return `${out}...`;
}

/**
 * Posts an outcome or a verdict. When the ledger refuses the body as too large (413: a release that
 * bounds these bodies at 256 KiB) and it carries a result, the result is sent again as
 * `{truncated, size, sha256}`: the effect happened, and recording it matters more than its bytes.
 */
async function postWithResult(
  t: RunTransport,
  path: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): ReturnType<RunTransport['send']> {
  const send = (payload: Record<string, unknown>) =>
    t.send({
      method: 'POST',
      path,
      body: JSON.stringify(payload),
      rule: 'plain',
      ...(signal === undefined ? {} : { signal }),
    });
  try {
    return await send(body);
  } catch (error) {
    if (!(error instanceof ToolLedgerRequestError && error.status === 413) || body.result == null)
      throw error;
    return send({ ...body, result: digestOf(JSON.stringify(body.result)) });
  }
}

/** What stands for a result the request cannot carry: its size and SHA-256. */
function digestOf(json: string): { truncated: true; size: number; sha256: string } {
  return {
    truncated: true,
    size: Buffer.byteLength(json, 'utf8'),
    sha256: createHash('sha256').update(json, 'utf8').digest('hex'),
  };
}

/**
 * The result as it is sent to the ledger: sanitized, JSON, whole up to {@link MAX_RESULT_BYTES} (a
 * larger one becomes `{truncated, size, sha256}`: the request could not carry it). A sanitizer that
 * throws sends `null`: the effect happened, so the outcome must still be recorded.
 */
function storedResult<T>(value: T, sanitize: ((result: T) => unknown) | undefined): unknown {
  let json: string;
  try {
    const clean = sanitize ? sanitize(value) : value;
    json = JSON.stringify(clean === undefined ? null : clean) ?? 'null';
  } catch {
    return null;
  }
  if (Buffer.byteLength(json, 'utf8') > MAX_RESULT_BYTES) return digestOf(json);
  return JSON.parse(json);
}

/**
 * `POST /v1/operations/{id}/outcome`, retried with the same token after a lost answer until the
 * ledger answers (the same outcome again is answered with the same record). A 409 means the claim is
 * no longer the operation's (superseded, or settled otherwise): the record as it stands is returned.
 */
async function recordOutcome(
  t: RunTransport,
  operationId: string,
  granted: Claim,
  local: LocalOutcome,
): Promise<Operation> {
  const body: Record<string, unknown> = { token: granted.token, outcome: local.outcome };
  if (local.result !== undefined) body.result = local.result;
  if (local.error !== undefined) body.error = local.error;
  try {
    // No caller signal: once the effect ran, its outcome is sent whatever the caller cancels.
    const { response } = await postWithResult(t, `${operationPath(operationId)}/outcome`, body);
    return parseOperation(response);
  } catch (error) {
    if (error instanceof ToolLedgerRequestError && error.status === 409) {
      return operationOf(t, operationId, error.problem);
    }
    throw new OutcomeNotRecordedError({
      operationId,
      attempt: granted.attempt,
      outcome: local.outcome,
      cause: error,
    });
  }
}

/**
 * Runs the caller's `reconcile` on an attempt the ledger does not know the outcome of, and posts an
 * `applied` or `not_applied` verdict (`POST /v1/operations/{id}/reconciliation`, conditioned on the
 * attempt and the downstream key, so it can never land on another attempt or a later operation that
 * reused the ID). Returns the operation after the verdict, or `undefined` when the verdict is
 * `unknown` (or `reconcile` threw).
 */
async function reconcileAttempt<T>(
  t: RunTransport,
  input: RunInput<T>,
  operation: Operation,
): Promise<Operation | undefined> {
  const downstreamKey = operation.downstream_key;
  if (typeof downstreamKey !== 'string' || input.reconcile === undefined) return undefined;
  let verdict: ReconcileVerdict<T>;
  try {
    verdict = await input.reconcile({
      operationId: input.operationId,
      tool: input.tool,
      attempt: operation.attempt,
      downstreamKey,
      signal: input.signal ?? new AbortController().signal,
    });
  } catch {
    return undefined;
  }
  if (verdict?.status !== 'applied' && verdict?.status !== 'not_applied') return undefined;
  const body: Record<string, unknown> = {
    attempt: operation.attempt,
    verdict: verdict.status,
    downstream_key: downstreamKey,
  };
  if (verdict.status === 'applied') body.result = storedResult(verdict.result, input.sanitizeResult);
  try {
    const { response } = await postWithResult(
      t,
      `${operationPath(input.operationId)}/reconciliation`,
      body,
      input.signal,
    );
    return parseOperation(response);
  } catch (error) {
    // Someone decided first (an operator, the reconciler, another caller's verdict): use what stands.
    if (error instanceof ToolLedgerRequestError && error.status === 409) {
      return operationOf(t, input.operationId, error.problem);
    }
    throw error;
  }
}

/** Polls until the operation leaves the state it is in; `undefined` when the wait's time ran out. */
async function waitForChange(
  t: RunTransport,
  operation: Operation,
  until: number,
  signal: AbortSignal | undefined,
): Promise<Operation | undefined> {
  const timeoutMs = until - t.clock.now();
  if (timeoutMs <= 0) return undefined;
  const options: WaitOptions = { timeoutMs, until: ALL_STATES.filter((state) => state !== operation.state) };
  if (signal) options.signal = signal;
  try {
    return await t.waitFor(operation.operation_id, options);
  } catch (error) {
    if (error instanceof WaitTimeoutError) return undefined;
    throw error;
  }
}

/** The record a 409 carries, or, when it carries none, the record as it now reads. */
async function operationOf(t: RunTransport, operationId: string, problem: Problem): Promise<Operation> {
  const candidate = problem.operation;
  if (
    isRecord(candidate) &&
    typeof candidate.operation_id === 'string' &&
    typeof candidate.state === 'string'
  ) {
    return candidate as Operation;
  }
  const { response } = await t.send({ method: 'GET', path: operationPath(operationId), rule: 'plain' });
  return parseOperation(response);
}

function finish(operation: Operation, executions: number): RunOutcome {
  const outcome = callResultKind(operation.state);
  const replayed = executions === 0 && isTerminalState(operation.state);
  return {
    outcome,
    operation,
    replayed,
    result: outcome === 'succeeded' ? operation.result : undefined,
    executions,
    model: toModelToolResult(envelopeForOperation(operation, replayed)),
  };
}
