import { afterEach, describe, expect, it } from 'vitest';
import {
  bearerToken,
  DeadlineExceededError,
  IdempotencyConflictError,
  InvalidOperationIdError,
  ToolLedgerClient,
  type ToolLedgerClientOptions,
  ToolLedgerRequestError,
  WaitTimeoutError,
} from '../../client/index';
import {
  fakeClock,
  operationBody,
  problem,
  type RecordedRequest,
  type Reply,
  type ScriptedServer,
  startScriptedServer,
} from './support/scripted-server';

const ID = 'run-1:s0:c0';
const ARGS = { url: 'http://127.0.0.1:9/hook', json: { n: 1, text: 'é' } };

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(script: (request: RecordedRequest, index: number) => Reply) {
  server = await startScriptedServer(script);
  return server;
}

function clientFor(s: ScriptedServer, options: Partial<ToolLedgerClientOptions> = {}) {
  const clock = fakeClock();
  const client = new ToolLedgerClient({
    endpoint: s.url,
    signer: bearerToken('dev-token'),
    clock,
    random: () => 0.5,
    ...options,
  });
  return { client, clock };
}

function expectSameRequestEveryTime(requests: RecordedRequest[]) {
  expect(requests.length).toBeGreaterThan(1);
  const first = requests[0]!;
  for (const request of requests) {
    expect(request.headers['idempotency-key']).toBe(`"${ID}"`);
    expect(request.body).toBe(first.body);
  }
}

describe('ToolLedgerClient.call', () => {
  it('sends the SPEC §5 request: sf-string key, JSON body, bearer token, Prefer when async', async () => {
    const s = await serve(() => ({
      status: 202,
      headers: { 'retry-after': '1' },
      json: operationBody(ID, 'queued'),
    }));
    const { client } = clientFor(s);
    const outcome = await client.call({
      operationId: ID,
      tool: 'webhook.post',
      arguments: ARGS,
      agentRunId: 'run-1',
      async: true,
    });
    expect(outcome).toMatchObject({ status: 202, replayed: false, retryAfterMs: 1000, attempts: 1 });
    expect(outcome.operation.state).toBe('queued');
    const [request] = s.requests;
    expect(request!.method).toBe('POST');
    expect(request!.url).toBe('/v1/operations');
    expect(request!.headers['idempotency-key']).toBe('"run-1:s0:c0"');
    expect(request!.headers.authorization).toBe('Bearer dev-token');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers.prefer).toBe('respond-async');
    expect(JSON.parse(request!.body)).toEqual({
      tool: 'webhook.post',
      arguments: ARGS,
      agent_run_id: 'run-1',
    });
  });

  it('keeps the stage path of the endpoint and sends no Prefer header for a synchronous call', async () => {
    const s = await serve(() => ({ status: 201, json: operationBody(ID, 'succeeded') }));
    const { client } = clientFor(s, { endpoint: `${s.url}/prod/` });
    await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    expect(s.requests[0]!.url).toBe('/prod/v1/operations');
    expect(s.requests[0]!.headers.prefer).toBeUndefined();
  });

  it('retries a lost response with the same Idempotency-Key and byte-identical body, and reports the replay', async () => {
    const s = await serve((_, i) =>
      i === 0
        ? { drop: true }
        : {
            status: 201,
            headers: { 'idempotent-replayed': 'true', location: `/v1/operations/${ID}` },
            json: operationBody(ID, 'succeeded', { replayed: true, result: { status: 200 } }),
          },
    );
    const { client, clock } = clientFor(s);
    const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    expect(outcome).toMatchObject({ status: 201, replayed: true, attempts: 2 });
    expect(outcome.operation.result).toEqual({ status: 200 });
    expectSameRequestEveryTime(s.requests);
    expect(clock.sleeps).toEqual([50]);
  });

  it('retries a request that gets no answer within the attempt timeout', async () => {
    const s = await serve((_, i) =>
      i === 0 ? { hang: true } : { status: 201, json: operationBody(ID, 'succeeded') },
    );
    const { client } = clientFor(s, { attemptTimeoutMs: 150 });
    const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    // At least 2: on a busy machine an answered attempt can also outlast 150 ms and be retried, with
    // the same key and bytes (exactly 2 failed there).
    expect(outcome.operation.state).toBe('succeeded');
    expect(outcome.attempts).toBeGreaterThanOrEqual(2);
    expectSameRequestEveryTime(s.requests);
  });

  it('waits at least Retry-After after a 409 operation_in_progress, then gets the outcome', async () => {
    const s = await serve((_, i) =>
      i === 0
        ? problem(409, 'operation_in_progress', {}, { 'retry-after': '2' })
        : { status: 201, json: operationBody(ID, 'succeeded') },
    );
    const { client, clock } = clientFor(s);
    const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    expect(outcome).toMatchObject({ status: 201, replayed: false, attempts: 2 });
    expect(clock.sleeps).toEqual([2000]);
    expectSameRequestEveryTime(s.requests);
  });

  it('retries a 503 failed_retryable attempt and a 503 ledger_unavailable with the same request', async () => {
    const s = await serve((_, i) => {
      if (i === 0)
        return { status: 503, headers: { 'retry-after': '1' }, json: operationBody(ID, 'failed_retryable') };
      if (i === 1) return problem(503, 'ledger_unavailable');
      return { status: 201, json: operationBody(ID, 'succeeded', { attempt: 2 }) };
    });
    const { client, clock } = clientFor(s);
    const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    expect(outcome.operation.attempt).toBe(2);
    expect(outcome.attempts).toBe(3);
    // 1000 from Retry-After, then full jitter: 0.5 * min(5000, 100 * 2^1).
    expect(clock.sleeps).toEqual([1000, 100]);
    expectSameRequestEveryTime(s.requests);
  });

  it('surfaces 422 as IdempotencyConflictError with the stored digest, without retrying', async () => {
    const s = await serve(() =>
      problem(422, 'idempotency_key_reused', { operation_id: ID, arguments_digest: 'v1:0123' }),
    );
    const { client } = clientFor(s);
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyConflictError);
    expect(error).toBeInstanceOf(ToolLedgerRequestError);
    expect(error).toMatchObject({
      name: 'IdempotencyConflictError',
      code: 'idempotency_key_reused',
      status: 422,
      operationId: ID,
      storedDigest: 'v1:0123',
    });
    expect(s.requests).toHaveLength(1);
  });

  it('reads the stored digest from problem details too', async () => {
    const s = await serve(() =>
      problem(422, 'idempotency_key_reused', { details: { arguments_digest: 'v1:abcd' } }),
    );
    const { client } = clientFor(s);
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ storedDigest: 'v1:abcd' });
  });

  it('surfaces other 4xx as ToolLedgerRequestError with the problem code, without retrying', async () => {
    const s = await serve(() =>
      problem(400, 'validation_failed', { issues: [{ path: 'url', message: 'Invalid URL' }] }),
    );
    const { client } = clientFor(s);
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerRequestError);
    expect(error).not.toBeInstanceOf(IdempotencyConflictError);
    expect(error).toMatchObject({ code: 'validation_failed', status: 400 });
    expect((error as ToolLedgerRequestError).problem.issues).toEqual([
      { path: 'url', message: 'Invalid URL' },
    ]);
    expect(s.requests).toHaveLength(1);
  });

  it('gives a code to a non-problem 403 (API Gateway answers IAM failures itself)', async () => {
    const s = await serve(() => ({ status: 403, json: { message: 'Missing Authentication Token' } }));
    const { client } = clientFor(s);
    await expect(
      client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS }),
    ).rejects.toMatchObject({
      code: 'forbidden',
      status: 403,
    });
  });

  it('returns 202 uncertain and needs_reconciliation as outcomes, not errors', async () => {
    for (const state of ['uncertain', 'needs_reconciliation', 'awaiting_approval', 'queued']) {
      const s = await serve(() => ({
        status: 202,
        headers: { 'retry-after': '5' },
        json: operationBody(ID, state),
      }));
      const { client } = clientFor(s);
      const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
      expect(outcome).toMatchObject({ status: 202, replayed: false, retryAfterMs: 5000, attempts: 1 });
      expect(outcome.operation.state).toBe(state);
      await s.close();
      server = undefined;
    }
  });

  it('stops retrying within the deadline and says what it saw last', async () => {
    const s = await serve(() => ({
      status: 503,
      headers: { 'retry-after': '1' },
      json: operationBody(ID, 'failed_retryable'),
    }));
    const { client, clock } = clientFor(s, { deadlineMs: 10_000, random: () => 0.999 });
    const started = clock.now();
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    const deadline = error as DeadlineExceededError;
    expect(deadline.lastStatus).toBe(503);
    expect(deadline.lastOperation?.state).toBe('failed_retryable');
    expect(deadline.attempts).toBe(s.requests.length);
    expect(clock.now() - started).toBeLessThan(10_000);
    // Exponential with full jitter at 0.999 of the cap, never below Retry-After, capped at 5 s.
    expect(clock.sleeps).toEqual([1000, 1000, 1000, 1000, 1598, 3196]);
    expectSameRequestEveryTime(s.requests);
  });

  it('keeps the operation a 409 carries, for the caller to follow after the deadline', async () => {
    const s = await serve(() =>
      problem(
        409,
        'operation_in_progress',
        { operation: operationBody(ID, 'pending') },
        { 'retry-after': '3' },
      ),
    );
    const { client } = clientFor(s, { deadlineMs: 7_000 });
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'DeadlineExceededError', lastStatus: 409, attempts: 3 });
    expect((error as DeadlineExceededError).lastOperation?.state).toBe('pending');
  });

  it('bounds the real time spent on a server that never answers', async () => {
    const s = await serve(() => ({ hang: true }));
    const client = new ToolLedgerClient({ endpoint: s.url, deadlineMs: 1_500, attemptTimeoutMs: 100 });
    const error = await client
      .call({ operationId: ID, tool: 'webhook.post', arguments: ARGS })
      .catch((e: unknown) => e);
    // The server never answers, so only the client's own timers end the call (one that ignored them
    // would hang the test). Each attempt lasts at least its 100 ms timeout, so a deadline of 1.5 s
    // leaves room for at most 15; a busy machine fires timers late and makes fewer, never more. (A
    // stopwatch bound of deadline + 150 ms failed on a busy machine.)
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).cause).toBeInstanceOf(Error);
    expect(s.requests.length).toBeGreaterThanOrEqual(2);
    expect(s.requests.length).toBeLessThanOrEqual(15);
    expectSameRequestEveryTime(s.requests);
  });

  it('stops when the caller aborts, with the caller’s reason', async () => {
    const s = await serve(() => problem(409, 'operation_in_progress', {}, { 'retry-after': '1' }));
    const controller = new AbortController();
    const { client } = clientFor(s, {
      clock: {
        now: () => Date.now(),
        sleep: async () => {
          controller.abort(new Error('agent shutting down'));
          throw controller.signal.reason;
        },
      },
    });
    await expect(
      client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS, signal: controller.signal }),
    ).rejects.toThrow('agent shutting down');
    expect(s.requests).toHaveLength(1);
  });

  it('refuses an invalid operation ID before sending anything', async () => {
    const s = await serve(() => ({ status: 201, json: operationBody(ID, 'succeeded') }));
    const { client } = clientFor(s);
    for (const bad of ['', 'has space', 'x'.repeat(256), 'é']) {
      await expect(
        client.call({ operationId: bad, tool: 'webhook.post', arguments: ARGS }),
      ).rejects.toBeInstanceOf(InvalidOperationIdError);
    }
    expect(s.requests).toHaveLength(0);
  });
});

describe('ToolLedgerClient.waitFor', () => {
  it('follows an uncertain operation through GET polling to its reconciled outcome', async () => {
    const states = ['uncertain', 'uncertain', 'succeeded'];
    let gets = 0;
    const s = await serve((request) => {
      if (request.method === 'POST')
        return { status: 202, headers: { 'retry-after': '1' }, json: operationBody(ID, 'uncertain') };
      const state = states[gets++] ?? 'succeeded';
      return {
        status: 200,
        json: operationBody(
          ID,
          state,
          state === 'succeeded' ? { reconciled: true, result: { status: 200 } } : {},
        ),
      };
    });
    const { client, clock } = clientFor(s);
    const outcome = await client.call({ operationId: ID, tool: 'webhook.post', arguments: ARGS });
    expect(outcome.operation.state).toBe('uncertain');
    const done = await client.waitFor(ID, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ state: 'succeeded', reconciled: true, result: { status: 200 } });
    const gets_ = s.requests.filter((r) => r.method === 'GET');
    expect(gets_).toHaveLength(3);
    expect(gets_[0]!.url).toBe('/v1/operations/run-1%3As0%3Ac0');
    // Poll backoff: 0.5 * 250, 0.5 * 500.
    expect(clock.sleeps).toEqual([125, 250]);
  });

  it('retries a lost GET response while polling', async () => {
    const s = await serve((_, i) =>
      i === 0 ? { drop: true } : { status: 200, json: operationBody(ID, 'succeeded') },
    );
    const { client } = clientFor(s);
    expect((await client.waitFor(ID)).state).toBe('succeeded');
    expect(s.requests).toHaveLength(2);
  });

  it('stops at any of the given states', async () => {
    const s = await serve(() => ({ status: 200, json: operationBody(ID, 'needs_reconciliation') }));
    const { client } = clientFor(s);
    const op = await client.waitFor(ID, { until: ['succeeded', 'needs_reconciliation'] });
    expect(op.state).toBe('needs_reconciliation');
    expect(s.requests).toHaveLength(1);
  });

  it('times out with the last state seen', async () => {
    const s = await serve(() => ({ status: 200, json: operationBody(ID, 'uncertain') }));
    const { client, clock } = clientFor(s);
    const started = clock.now();
    const error = await client.waitFor(ID, { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as WaitTimeoutError).lastOperation?.state).toBe('uncertain');
    expect(clock.now() - started).toBeLessThan(5_000);
  });

  it('surfaces 404 as not_found', async () => {
    const s = await serve(() => problem(404, 'not_found'));
    const { client } = clientFor(s);
    await expect(client.waitFor(ID)).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('with waitForCreation, polls through 404 until the executor has created the record', async () => {
    const s = await serve((_, i) =>
      i < 2 ? problem(404, 'not_found') : { status: 200, json: operationBody(ID, 'succeeded') },
    );
    const { client } = clientFor(s);
    expect((await client.waitFor(ID, { waitForCreation: true })).state).toBe('succeeded');
    expect(s.requests).toHaveLength(3);
  });
});

describe('ToolLedgerClient operator and approver routes', () => {
  it('approves and rejects bound to a digest; a state_changed 409 is a decision, not retried', async () => {
    const s = await serve((request) => {
      if (request.url.endsWith('/approval') && JSON.parse(request.body).decision === 'reject') {
        return problem(409, 'state_changed', { operation: operationBody(ID, 'queued') });
      }
      return { status: 200, json: operationBody(ID, 'queued') };
    });
    const { client } = clientFor(s);
    expect((await client.approve(ID, 'v1:aaaa')).state).toBe('queued');
    await expect(client.reject(ID, 'v1:aaaa')).rejects.toMatchObject({ code: 'state_changed', status: 409 });
    expect(s.requests.map((r) => [r.method, r.url, JSON.parse(r.body)])).toEqual([
      [
        'POST',
        '/v1/operations/run-1%3As0%3Ac0/approval',
        { decision: 'approve', arguments_digest: 'v1:aaaa' },
      ],
      [
        'POST',
        '/v1/operations/run-1%3As0%3Ac0/approval',
        { decision: 'reject', arguments_digest: 'v1:aaaa' },
      ],
    ]);
  });

  it('resolves, gets with arguments, lists with a cursor and reads the tools', async () => {
    const s = await serve((request) => {
      if (request.url.startsWith('/v1/tools'))
        return { status: 200, json: { tools: [{ name: 'webhook.post' }] } };
      if (request.url.startsWith('/v1/operations?')) {
        return { status: 200, json: { operations: [operationBody(ID, 'uncertain')], cursor: 'next-page' } };
      }
      return { status: 200, json: operationBody(ID, 'succeeded', { resolved_by: 'local:operator' }) };
    });
    const { client } = clientFor(s);
    expect(
      (await client.resolve(ID, { outcome: 'applied', result: { ok: true }, attempt: 1 })).resolved_by,
    ).toBe('local:operator');
    await client.get(ID, { includeArguments: true });
    const page = await client.list({ state: 'uncertain', limit: 10 });
    expect(page.cursor).toBe('next-page');
    expect(page.operations[0]!.state).toBe('uncertain');
    expect(await client.tools()).toEqual([{ name: 'webhook.post' }]);
    expect(s.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/operations/run-1%3As0%3Ac0/resolution',
      'GET /v1/operations/run-1%3As0%3Ac0?include=arguments',
      'GET /v1/operations?state=uncertain&limit=10',
      'GET /v1/tools',
    ]);
    expect(JSON.parse(s.requests[0]!.body)).toEqual({ outcome: 'applied', result: { ok: true }, attempt: 1 });
  });
});
