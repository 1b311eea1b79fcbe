import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AWAITING_APPROVAL_NOTE,
  bearerToken,
  ClaimLostError,
  DeadlineExceededError,
  IdempotencyConflictError,
  modelResultForError,
  NOT_SETTLED_NOTE,
  NotAppliedError,
  OutcomeNotRecordedError,
  outcomeKindOf,
  REPLAY_NOTE,
  type RunContext,
  TerminalToolError,
  ToolLedgerClient,
  type ToolLedgerClientOptions,
  ToolLedgerRequestError,
  UncertainOutcomeError,
} from '../../client/index';
import {
  NotAppliedError as ServerNotAppliedError,
  TerminalToolError as ServerTerminalToolError,
  UncertainOutcomeError as ServerUncertainOutcomeError,
} from '../../functions/domain/tool';
import { deferred, manualClock } from './support/manual-clock';
import {
  fakeClock,
  operationBody,
  problem,
  type RecordedRequest,
  type Reply,
  type ScriptedServer,
  startScriptedServer,
} from './support/scripted-server';

/**
 * `ledger.run`'s own decisions, against a scripted server playing the ledger's documented answers:
 * what it sends, when it runs `execute` and when never, how it classifies a throw, how it keeps and
 * loses a lease, how it retries a lost answer. The protocol against the real ledger is in
 * test/client-e2e/caller-run.test.ts.
 */

const ID = 'run-1:s0:c0';
const TOOL = 'billing.refund';
const ARGS = { invoice: 'in_123', cents: 500 };
const DK = 'dk_0123456789abcdefghijklmnopqrstuvwxyzABCDE';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Route = 'claim' | 'lease' | 'outcome' | 'reconciliation' | 'get';

function route(request: RecordedRequest): Route {
  const path = request.url.split('?')[0] ?? '';
  if (request.method === 'GET') return 'get';
  if (path === '/v1/operations') return 'claim';
  if (path.endsWith('/lease')) return 'lease';
  if (path.endsWith('/outcome')) return 'outcome';
  if (path.endsWith('/reconciliation')) return 'reconciliation';
  throw new Error(`unexpected request ${request.method} ${request.url}`);
}

async function serve(script: (request: RecordedRequest, route: Route, index: number) => Reply) {
  server = await startScriptedServer((request, index) => script(request, route(request), index));
  return server;
}

function sent(s: ScriptedServer, which: Route): Record<string, unknown>[] {
  return s.requests
    .filter((r) => route(r) === which)
    .map((r) => JSON.parse(r.body) as Record<string, unknown>);
}

function callerOp(state: string, extra: Record<string, unknown> = {}) {
  return operationBody(ID, state, { tool: TOOL, execution: 'caller', downstream_key: DK, ...extra });
}

/** The ledger's clock in the scripted answers (the `Date` header a claim's lease is read against). */
const LEDGER_NOW = Date.UTC(2025, 0, 2, 3, 4, 5);

function claimed(attempt = 1, extra: Record<string, unknown> = {}, leaseSeconds = 61): Reply {
  const lease = new Date(LEDGER_NOW + leaseSeconds * 1000).toISOString();
  return {
    status: 200,
    headers: { date: new Date(LEDGER_NOW).toUTCString() },
    json: {
      ...callerOp('pending', { attempt, lease_expires_at: lease, ...extra }),
      claim: {
        token: `tlc1.${attempt}.token${attempt}`,
        attempt,
        lease_expires_at: lease,
        downstream_key: DK,
      },
    },
  };
}

function settled(state: string, extra: Record<string, unknown> = {}): Reply {
  return { status: 200, json: callerOp(state, extra) };
}

/**
 * A client on a clock that moves only when a test moves it (so no heartbeat is sent unless a test
 * asks for one), with retries and polls that do not wait.
 */
function clientFor(s: ScriptedServer, options: Partial<ToolLedgerClientOptions> = {}) {
  return new ToolLedgerClient({
    endpoint: s.url,
    signer: bearerToken('dev-token'),
    clock: manualClock(),
    random: () => 0.5,
    backoff: { baseMs: 0 },
    pollBackoff: { baseMs: 0 },
    ...options,
  });
}

/** An effect that counts its runs and returns what it is given. */
function effect<T>(value: T) {
  const runs: RunContext[] = [];
  return {
    runs,
    execute: async (ctx: RunContext) => {
      runs.push(ctx);
      return value;
    },
  };
}

describe('ledger.run: claim and outcome', () => {
  it('claims as a caller, runs execute once with the claim, and records the result with the token', async () => {
    const s = await serve((_, r) =>
      r === 'claim' ? claimed(1) : settled('succeeded', { result: { refund: 're_1' } }),
    );
    const fx = effect({ refund: 're_1', secret: 'sk' });
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      sanitizeResult: ({ refund }) => ({ refund }),
      leaseSeconds: 30,
      requiresApproval: false,
      downstreamIdempotent: true,
      maxAttempts: 2,
      agentRunId: 'run-1',
    });
    expect(out).toMatchObject({
      outcome: 'succeeded',
      replayed: false,
      executions: 1,
      result: { refund: 're_1' },
    });
    expect(fx.runs).toHaveLength(1);
    expect(fx.runs[0]).toMatchObject({ operationId: ID, tool: TOOL, attempt: 1, downstreamKey: DK });
    expect(fx.runs[0]!.signal.aborted).toBe(false);

    const [claimRequest] = s.requests;
    expect(claimRequest!.headers['idempotency-key']).toBe(`"${ID}"`);
    const [body] = sent(s, 'claim');
    expect(body).toEqual({
      tool: TOOL,
      arguments: ARGS,
      execution: 'caller',
      lease_seconds: 30,
      requires_approval: false,
      downstream_idempotent: true,
      max_attempts: 2,
      agent_run_id: 'run-1',
      claim_id: expect.stringMatching(/^[A-Za-z0-9_-]{22,128}$/),
    });
    expect(sent(s, 'outcome')).toEqual([
      { token: 'tlc1.1.token1', outcome: 'succeeded', result: { refund: 're_1' } },
    ]);
    expect(s.requests.map((r) => r.url)).toEqual([
      '/v1/operations',
      `/v1/operations/${encodeURIComponent(ID)}/outcome`,
    ]);
    expect(JSON.parse(out.model.content)).toEqual({
      operation_id: ID,
      state: 'succeeded',
      replayed: false,
      result: { refund: 're_1' },
    });
  });

  it('sends the arguments as they were when run was called, whatever the caller changes later', async () => {
    const args = { invoice: 'in_1', lines: [1, 2] };
    const s = await serve((_, r, i) =>
      r === 'claim' && i === 0 ? { drop: true } : r === 'claim' ? claimed(1) : settled('succeeded'),
    );
    await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: args,
      execute: async () => {
        args.lines.push(3);
      },
    });
    const claims = s.requests.filter((r) => route(r) === 'claim');
    expect(claims).toHaveLength(2);
    expect(claims[1]!.body).toBe(claims[0]!.body);
    expect((JSON.parse(claims[0]!.body) as { arguments: unknown }).arguments).toEqual({
      invoice: 'in_1',
      lines: [1, 2],
    });
  });

  it('retries a lost claim answer with the same claim_id, so it gets its own claim back and runs once', async () => {
    const s = await serve((_, r, i) => {
      if (r === 'claim') return i === 0 ? { drop: true } : claimed(1);
      return settled('succeeded', { result: 1 });
    });
    const fx = effect(1);
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    const claims = sent(s, 'claim');
    expect(claims).toHaveLength(2);
    expect(claims[1]!.claim_id).toBe(claims[0]!.claim_id);
    expect(fx.runs).toHaveLength(1);
    expect(out.outcome).toBe('succeeded');
  });

  it('retries a lost outcome answer with the byte-identical body (same token) and runs execute once', async () => {
    let outcomes = 0;
    const s = await serve((_, r) => {
      if (r === 'claim') return claimed(1);
      outcomes++;
      return outcomes === 1 ? { drop: true } : settled('succeeded', { result: 'done' });
    });
    const fx = effect('done');
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    const posts = s.requests.filter((r) => route(r) === 'outcome');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.body).toBe(posts[0]!.body);
    expect(fx.runs).toHaveLength(1);
    expect(out).toMatchObject({ outcome: 'succeeded', result: 'done', executions: 1 });
  });

  it('throws OutcomeNotRecordedError when the outcome gets no answer in time, after one execution', async () => {
    const s = await serve((_, r) => (r === 'claim' ? claimed(1) : { drop: true }));
    const fx = effect('done');
    // A clock whose sleeps pass at once, so the retries reach the deadline.
    const error = await clientFor(s, { deadlineMs: 2_000, clock: fakeClock(), backoff: { baseMs: 100 } })
      .run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeNotRecordedError);
    expect(error).toMatchObject({
      code: 'outcome_not_recorded',
      operationId: ID,
      attempt: 1,
      outcome: 'succeeded',
    });
    expect((error as OutcomeNotRecordedError).cause).toBeInstanceOf(DeadlineExceededError);
    expect(fx.runs).toHaveLength(1);
    // The model is told the action may have happened, not that it failed.
    expect(JSON.parse(modelResultForError(ID, error)!.content)).toMatchObject({
      state: 'no_answer',
      replayed: false,
    });
  });

  it('returns a 409 state_changed record as it stands when its outcome lands on a superseded attempt', async () => {
    const s = await serve((_, r) =>
      r === 'claim'
        ? claimed(1)
        : problem(409, 'state_changed', {
            operation: callerOp('succeeded', { attempt: 2, result: 'theirs' }),
          }),
    );
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: effect('mine').execute,
    });
    expect(out).toMatchObject({ outcome: 'succeeded', result: 'theirs', executions: 1, replayed: false });
    expect(out.operation.attempt).toBe(2);
  });
});

describe('ledger.run: states where it never executes', () => {
  it('returns a stored outcome (201) as a replay without calling execute', async () => {
    const s = await serve(() => ({
      status: 201,
      headers: { 'idempotent-replayed': 'true' },
      json: callerOp('succeeded', { replayed: true, result: { refund: 're_1' } }),
    }));
    const fx = effect('never');
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({
      outcome: 'succeeded',
      replayed: true,
      executions: 0,
      result: { refund: 're_1' },
    });
    expect(out.model.envelope.note).toBe(REPLAY_NOTE);
    expect(s.requests).toHaveLength(1);
  });

  it('a stored terminal failure is a replay too: outcome failed, never executed', async () => {
    const s = await serve(() => ({
      status: 201,
      json: callerOp('failed_terminal', { error: { code: 'card_declined', message: 'declined' } }),
    }));
    const fx = effect('never');
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'failed', replayed: true, result: undefined });
    expect(out.model.isError).toBe(true);
  });

  it('throws IdempotencyConflictError on 422 and runs nothing', async () => {
    const s = await serve(() => problem(422, 'idempotency_key_reused', { arguments_digest: 'v1:abcd' }));
    const fx = effect('never');
    const error = await clientFor(s)
      .run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(error).toMatchObject({ operationId: ID, storedDigest: 'v1:abcd' });
    expect(fx.runs).toHaveLength(0);
    expect(JSON.parse(modelResultForError(ID, error)!.content)).toMatchObject({ state: 'conflict' });
  });

  it('throws the refusal of a tool the deployment runs itself, and runs nothing', async () => {
    const s = await serve(() =>
      problem(400, 'tool_executed_by_ledger', { detail: 'the ledger runs this tool' }),
    );
    const fx = effect('never');
    const error = await clientFor(s)
      .run({ operationId: ID, tool: 'webhook.post', arguments: ARGS, execute: fx.execute })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerRequestError);
    expect(error).toMatchObject({ code: 'tool_executed_by_ledger', status: 400 });
    expect(fx.runs).toHaveLength(0);
    expect(s.requests).toHaveLength(1);
  });

  it('reports a claim held elsewhere (409) without executing or retrying', async () => {
    const s = await serve(() =>
      problem(409, 'operation_in_progress', { operation: callerOp('pending') }, { 'retry-after': '1' }),
    );
    const fx = effect('never');
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'not_settled', replayed: false, executions: 0 });
    expect(out.operation.state).toBe('pending');
    expect(out.model.envelope.note).toBe(NOT_SETTLED_NOTE);
    expect(s.requests).toHaveLength(1);
  });

  it('with wait, follows a claim held elsewhere until it settles and returns that outcome unexecuted', async () => {
    let gets = 0;
    const s = await serve((_, r) => {
      if (r === 'get') {
        gets++;
        return settled(gets < 2 ? 'pending' : 'succeeded', { result: 'theirs' });
      }
      return gets < 2
        ? problem(409, 'operation_in_progress', { operation: callerOp('pending') })
        : { status: 201, json: callerOp('succeeded', { replayed: true, result: 'theirs' }) };
    });
    const fx = effect('never');
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      wait: true,
    });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'succeeded', replayed: true, result: 'theirs' });
    expect(s.requests.map((r) => route(r))).toEqual(['claim', 'get', 'get', 'claim']);
  });

  it('reports awaiting_approval at once without wait, and never executes', async () => {
    const s = await serve(() => ({
      status: 202,
      json: callerOp('awaiting_approval', { action_required: 'approval' }),
    }));
    const fx = effect('never');
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      requiresApproval: true,
    });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 0 });
    expect(out.model.envelope.note).toBe(AWAITING_APPROVAL_NOTE);
    expect(sent(s, 'claim')[0]).toMatchObject({ requires_approval: true });
  });

  it('with wait, polls an awaiting_approval operation until it is approved, then claims and runs it', async () => {
    let approved = false;
    const s = await serve((_, r) => {
      if (r === 'get') {
        approved = true;
        return settled('queued');
      }
      if (r === 'claim') return approved ? claimed(1) : { status: 202, json: callerOp('awaiting_approval') };
      return settled('succeeded', { result: 'sent' });
    });
    const fx = effect('sent');
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      wait: { timeoutMs: 10_000 },
    });
    expect(fx.runs).toHaveLength(1);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1, replayed: false });
    expect(s.requests.map((r) => route(r))).toEqual(['claim', 'get', 'claim', 'outcome']);
    const claims = sent(s, 'claim');
    expect(claims[1]!.claim_id).not.toBe(claims[0]!.claim_id);
  });

  it('with wait, reports the last state seen when the wait runs out', async () => {
    const s = await serve((_, r) =>
      r === 'get' ? settled('awaiting_approval') : { status: 202, json: callerOp('awaiting_approval') },
    );
    const fx = effect('never');
    const out = await clientFor(s, { clock: fakeClock(), pollBackoff: { baseMs: 250 } }).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      wait: { timeoutMs: 3_000 },
    });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'not_settled' });
    expect(out.operation.state).toBe('awaiting_approval');
  });

  it('reports needs_reconciliation without a reconcile, and never executes', async () => {
    const s = await serve(() => ({ status: 202, json: callerOp('needs_reconciliation') }));
    const fx = effect('never');
    const out = await clientFor(s).run({ operationId: ID, tool: TOOL, arguments: ARGS, execute: fx.execute });
    expect(fx.runs).toHaveLength(0);
    expect(out.operation.state).toBe('needs_reconciliation');
    expect(s.requests).toHaveLength(1);
  });
});

describe('ledger.run: classifying what execute threw', () => {
  async function outcomeOf(thrown: unknown) {
    const s = await serve((_, r) => (r === 'claim' ? claimed(1) : settled('failed_terminal')));
    await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: async () => {
        throw thrown;
      },
      maxAttempts: 1,
    });
    return sent(s, 'outcome')[0];
  }

  it('TerminalToolError → failed_terminal with its code and message', async () => {
    expect(
      await outcomeOf(new TerminalToolError('card_declined', 'the card was declined', { status: 402 })),
    ).toEqual({
      token: 'tlc1.1.token1',
      outcome: 'failed_terminal',
      error: { code: 'card_declined', message: 'the card was declined' },
    });
  });

  it('NotAppliedError → failed_retryable with its code and message', async () => {
    expect(
      await outcomeOf(new NotAppliedError('connect_refused', 'the target refused the connection')),
    ).toMatchObject({
      outcome: 'failed_retryable',
      error: { code: 'connect_refused', message: 'the target refused the connection' },
    });
  });

  it('UncertainOutcomeError → uncertain with its code, never its message', async () => {
    expect(await outcomeOf(new UncertainOutcomeError('http_503', 'card 4242 failed'))).toEqual({
      token: 'tlc1.1.token1',
      outcome: 'uncertain',
      error: { code: 'http_503', message: 'the outcome of the attempt is unknown' },
    });
  });

  it('anything else → uncertain unknown_error, never its message', async () => {
    const body = await outcomeOf(new Error('socket hang up while sending invoice in_123'));
    expect(body).toMatchObject({ outcome: 'uncertain', error: { code: 'unknown_error' } });
    expect(JSON.stringify(body)).not.toContain('in_123');
    expect(await outcomeOf('a string')).toMatchObject({
      outcome: 'uncertain',
      error: { code: 'unknown_error' },
    });
  });

  it("the server package's errors (tool-ledger/tool) classify the same, without instanceof across packages", async () => {
    expect(await outcomeOf(new ServerTerminalToolError('not_found', 'no such invoice'))).toMatchObject({
      outcome: 'failed_terminal',
      error: { code: 'not_found' },
    });
    expect(
      await outcomeOf(new ServerNotAppliedError('throttled', 'rate limited before sending')),
    ).toMatchObject({
      outcome: 'failed_retryable',
    });
    expect(await outcomeOf(new ServerUncertainOutcomeError('timeout', 'x'))).toMatchObject({
      outcome: 'uncertain',
      error: { code: 'timeout' },
    });
  });

  it('one vocabulary: each package recognises the other package’s outcome errors with instanceof', () => {
    expect(new ServerTerminalToolError('a', 'b')).toBeInstanceOf(TerminalToolError);
    expect(new TerminalToolError('a', 'b')).toBeInstanceOf(ServerTerminalToolError);
    expect(new NotAppliedError('a', 'b')).toBeInstanceOf(ServerNotAppliedError);
    expect(new ServerUncertainOutcomeError('a', 'b')).toBeInstanceOf(UncertainOutcomeError);
    expect(new TerminalToolError('a', 'b')).not.toBeInstanceOf(NotAppliedError);
    expect(outcomeKindOf(new ServerNotAppliedError('a', 'b'))).toBe('not_applied');
    expect(
      outcomeKindOf(Object.assign(new Error('x'), { name: 'TerminalToolError', code: 'x' })),
    ).toBeUndefined();
  });

  it('makes a code the ledger would refuse storable, and cuts a long message on a character boundary', async () => {
    const body = await outcomeOf(new TerminalToolError('Card Declined!', 'é'.repeat(2_000)));
    const error = body!.error as { code: string; message: string };
    expect(error.code).toBe('card_declined_');
    expect(Buffer.byteLength(error.message, 'utf8')).toBeLessThanOrEqual(1024);
    expect(error.message).toMatch(/^é+\.\.\.$/);
  });

  it('records a not-applied attempt, then claims the next attempt after a backoff with a new claim_id', async () => {
    const clock = manualClock();
    const s = await serve((request, r) => {
      if (r === 'claim') return claimed(sent(s, 'claim').length);
      const { outcome } = JSON.parse(request.body) as { outcome: string };
      return outcome === 'failed_retryable'
        ? settled('failed_retryable')
        : settled('succeeded', { attempt: 2 });
    });
    const contexts: RunContext[] = [];
    const running = clientFor(s, { clock, backoff: { baseMs: 100 } }).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: async (ctx) => {
        contexts.push(ctx);
        if (ctx.attempt === 1) throw new NotAppliedError('connect_refused', 'refused');
        return 'ok';
      },
    });
    // Sleep 1 is attempt 1's heartbeat timer; sleep 2 is the backoff before the next claim.
    await clock.sleepsStarted(2);
    expect(sent(s, 'claim')).toHaveLength(1);
    expect(clock.nextWake()).toBe(50);
    clock.advance(50);
    const out = await running;
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 2 });
    expect(contexts.map((c) => [c.attempt, c.downstreamKey])).toEqual([
      [1, DK],
      [2, DK],
    ]);
    expect(sent(s, 'outcome').map((o) => o.outcome)).toEqual(['failed_retryable', 'succeeded']);
    const claims = sent(s, 'claim');
    expect(claims[1]!.claim_id).not.toBe(claims[0]!.claim_id);
  });

  it('sends what sanitizeResult returns, null when it throws, a 300 KB result whole, and a digest for one a request cannot carry', async () => {
    const results: unknown[] = [];
    for (const [value, sanitize] of [
      [
        { a: 1 },
        () => {
          throw new Error('bad');
        },
      ],
      [{ big: 'x'.repeat(300_000) }, undefined],
      [{ big: 'x'.repeat(3_000_000) }, undefined],
      [undefined, undefined],
    ] as const) {
      const s = await serve((_, r) => (r === 'claim' ? claimed(1) : settled('succeeded')));
      await clientFor(s).run({
        operationId: ID,
        tool: TOOL,
        arguments: ARGS,
        execute: async () => value,
        ...(sanitize ? { sanitizeResult: sanitize } : {}),
      });
      results.push(sent(s, 'outcome')[0]!.result);
      await s.close();
      server = undefined;
    }
    expect(results[0]).toBeNull();
    expect(results[1]).toEqual({ big: 'x'.repeat(300_000) });
    expect(results[2]).toEqual({
      truncated: true,
      size: 3_000_010,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(results[3]).toBeNull();
  });

  it('a ledger that refuses the outcome as too large (413) gets the result as size and SHA-256, and execute ran once', async () => {
    const value = { big: 'y'.repeat(400_000) };
    const s = await serve((request, r) => {
      if (r === 'claim') return claimed(1);
      const body = JSON.parse(request.body) as { result?: { truncated?: boolean } };
      if (r === 'outcome' && body.result?.truncated !== true) return problem(413, 'payload_too_large');
      return settled('succeeded');
    });
    const run = effect(value);
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: run.execute,
    });
    expect(run.runs).toHaveLength(1);
    expect(out.outcome).toBe('succeeded');
    const posts = sent(s, 'outcome');
    expect(posts).toHaveLength(2);
    expect(posts[0]?.result).toEqual(value);
    const json = JSON.stringify(value);
    expect(posts[1]).toMatchObject({
      token: posts[0]?.token,
      outcome: 'succeeded',
      result: { truncated: true, size: json.length, sha256: createHash('sha256').update(json).digest('hex') },
    });
  });
});

describe('ledger.run: keeping the lease', () => {
  it('sends a heartbeat with the token every third of the lease while execute runs', async () => {
    const clock = manualClock();
    const done = deferred();
    const s = await serve((_, r) =>
      r === 'claim' ? claimed(1) : r === 'lease' ? claimed(1) : settled('succeeded'),
    );
    const running = clientFor(s, { clock }).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      leaseSeconds: 30,
      execute: async () => {
        await done.promise;
        return 'ok';
      },
    });
    await clock.sleepsStarted(1);
    expect(clock.nextWake()).toBe(10_000);
    clock.advance(10_000);
    await clock.sleepsStarted(2);
    clock.advance(10_000);
    await clock.sleepsStarted(3);
    done.resolve();
    const out = await running;
    expect(out.outcome).toBe('succeeded');
    expect(sent(s, 'lease')).toEqual([{ token: 'tlc1.1.token1' }, { token: 'tlc1.1.token1' }]);
    expect(s.requests.map((r) => route(r))).toEqual(['claim', 'lease', 'lease', 'outcome']);
  });

  it('keeps the lease the ledger granted when it is shorter than the one asked for', async () => {
    const clock = manualClock();
    const done = deferred();
    // Reserved earlier with a 7 s lease: the record's policy wins over this run's 60 s.
    const s = await serve((_, r) =>
      r === 'claim' || r === 'lease' ? claimed(1, {}, 7) : settled('succeeded'),
    );
    const running = clientFor(s, { clock }).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      leaseSeconds: 60,
      execute: async () => {
        await done.promise;
        return 'ok';
      },
    });
    await clock.sleepsStarted(1);
    expect(clock.nextWake()).toBe(2_000);
    done.resolve();
    await running;
  });

  it('a heartbeat answered 409 aborts ctx.signal with ClaimLostError, and the outcome still goes out', async () => {
    const clock = manualClock();
    const s = await serve((_, r) => {
      if (r === 'claim') return claimed(1);
      if (r === 'lease') return problem(409, 'state_changed', { operation: callerOp('uncertain') });
      return settled('uncertain', { error: { code: 'claim_lost', message: 'x' } });
    });
    let reason: unknown;
    const out = await (async () => {
      const running = clientFor(s, { clock }).run({
        operationId: ID,
        tool: TOOL,
        arguments: ARGS,
        leaseSeconds: 3,
        execute: (ctx) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              reject(new Error('aborted by the signal'));
            }),
          ),
      });
      await clock.sleepsStarted(1);
      clock.advance(1_000);
      return running;
    })();
    expect(reason).toBeInstanceOf(ClaimLostError);
    expect(reason).toMatchObject({ code: 'claim_lost', operationId: ID, attempt: 1 });
    expect(sent(s, 'outcome')).toEqual([
      {
        token: 'tlc1.1.token1',
        outcome: 'uncertain',
        error: {
          code: 'claim_lost',
          message: 'the outcome of the attempt is unknown',
        },
      },
    ]);
    expect(out).toMatchObject({ outcome: 'not_settled', executions: 1 });
  });

  it('aborts with lease_expired when no heartbeat is answered before the lease ends', async () => {
    const clock = manualClock();
    const s = await serve((_, r) => {
      if (r === 'claim') return claimed(1);
      if (r === 'lease') {
        clock.advance(5_000); // the answer is lost and the lease runs out meanwhile
        return { drop: true };
      }
      return settled('uncertain');
    });
    let reason: unknown;
    const running = clientFor(s, { clock, backoff: { baseMs: 0 } }).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      leaseSeconds: 3,
      execute: (ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            reject(ctx.signal.reason);
          }),
        ),
    });
    await clock.sleepsStarted(1);
    clock.advance(1_000);
    await running;
    expect(reason).toMatchObject({ name: 'ClaimLostError', code: 'lease_expired' });
    expect(sent(s, 'outcome')[0]).toMatchObject({ outcome: 'uncertain', error: { code: 'lease_expired' } });
  });

  it("the caller's signal aborts ctx.signal, and the outcome is still recorded", async () => {
    const abort = new AbortController();
    const s = await serve((_, r) => (r === 'claim' ? claimed(1) : settled('uncertain')));
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      signal: abort.signal,
      execute: (ctx) => {
        const stopped = new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
        abort.abort(new Error('user cancelled'));
        return stopped;
      },
    });
    expect(sent(s, 'outcome')[0]).toMatchObject({ outcome: 'uncertain', error: { code: 'aborted' } });
    expect(out.operation.state).toBe('uncertain');
  });
});

describe('ledger.run: reconciling an unknown outcome', () => {
  it('on its own uncertain outcome, asks reconcile and posts applied with attempt and downstream key', async () => {
    const s = await serve((_, r) => {
      if (r === 'claim') return claimed(1);
      if (r === 'outcome') return settled('uncertain');
      return settled('succeeded', { reconciled: true, result: { refund: 're_9' } });
    });
    const checks: RunContext[] = [];
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: async () => {
        throw new Error('reset after send');
      },
      reconcile: async (ctx) => {
        checks.push(ctx);
        return { status: 'applied', result: { refund: 're_9', secret: 's' } };
      },
      sanitizeResult: (r) => ({ refund: (r as { refund: string }).refund }),
    });
    expect(checks.map((c) => [c.attempt, c.downstreamKey])).toEqual([[1, DK]]);
    expect(sent(s, 'reconciliation')).toEqual([
      { attempt: 1, verdict: 'applied', downstream_key: DK, result: { refund: 're_9' } },
    ]);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1, result: { refund: 're_9' } });
  });

  it('on a 202 uncertain, reconcile not_applied claims the next attempt with the same downstream key', async () => {
    let verdicts = 0;
    const s = await serve((_, r) => {
      if (r === 'claim') return verdicts === 0 ? { status: 202, json: callerOp('uncertain') } : claimed(2);
      if (r === 'reconciliation') {
        verdicts++;
        return settled('failed_retryable');
      }
      return settled('succeeded', { attempt: 2, result: 'ok' });
    });
    const fx = effect('ok');
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      reconcile: () => ({ status: 'not_applied' }),
    });
    expect(sent(s, 'reconciliation')).toEqual([{ attempt: 1, verdict: 'not_applied', downstream_key: DK }]);
    expect(fx.runs.map((c) => [c.attempt, c.downstreamKey])).toEqual([[2, DK]]);
    expect(out).toMatchObject({ outcome: 'succeeded', executions: 1 });
    expect(s.requests.map((r) => route(r))).toEqual(['claim', 'reconciliation', 'claim', 'outcome']);
  });

  it('reconcile unknown (or a throw) posts nothing and reports the uncertain operation', async () => {
    for (const reconcile of [
      () => ({ status: 'unknown' as const }),
      () => {
        throw new Error('target down');
      },
    ]) {
      const s = await serve(() => ({ status: 202, json: callerOp('uncertain') }));
      const fx = effect('never');
      const out = await clientFor(s).run({
        operationId: ID,
        tool: TOOL,
        arguments: ARGS,
        execute: fx.execute,
        reconcile,
      });
      expect(fx.runs).toHaveLength(0);
      expect(out).toMatchObject({ outcome: 'not_settled', replayed: false });
      expect(s.requests.map((r) => route(r))).toEqual(['claim']);
      await s.close();
      server = undefined;
    }
  });

  it('a verdict that loses to another decision (409) returns the record as it stands', async () => {
    const s = await serve((_, r) =>
      r === 'claim'
        ? { status: 202, json: callerOp('needs_reconciliation') }
        : problem(409, 'state_changed', {
            operation: callerOp('succeeded', { resolved_by: 'op', result: 'x' }),
          }),
    );
    const fx = effect('never');
    const out = await clientFor(s).run({
      operationId: ID,
      tool: TOOL,
      arguments: ARGS,
      execute: fx.execute,
      reconcile: () => ({ status: 'applied', result: 'y' }),
    });
    expect(fx.runs).toHaveLength(0);
    expect(out).toMatchObject({ outcome: 'succeeded', result: 'x', replayed: true });
  });
});

describe('ledger.run: bad input', () => {
  it('throws before sending anything', async () => {
    const s = await serve(() => claimed(1));
    const client = clientFor(s);
    const base = { operationId: ID, tool: TOOL, arguments: ARGS, execute: async () => 1 };
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ operationId: 'has space' }, /operation ID/],
      [{ tool: '' }, /tool/],
      [{ arguments: undefined }, /arguments/],
      [{ execute: undefined }, /execute/],
      [{ reconcile: 'yes' }, /reconcile/],
      [{ leaseSeconds: 0 }, /leaseSeconds/],
      [{ leaseSeconds: 901 }, /leaseSeconds/],
      [{ leaseSeconds: 1.5 }, /leaseSeconds/],
      [{ maxAttempts: 11 }, /maxAttempts/],
      [{ arguments: () => 1 }, /JSON/],
    ];
    for (const [change, message] of bad) {
      await expect(client.run({ ...base, ...change } as never)).rejects.toThrow(message);
    }
    expect(s.requests).toHaveLength(0);
  });
});
