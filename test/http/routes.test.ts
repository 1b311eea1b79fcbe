import { beforeEach, describe, expect, it, vi } from 'vitest';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { captureOutput, type TestApi, type TestRequest, testApi } from './support';

const db = useDynalite();
let tool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  api = await testApi(db.client, [tool.tool]);
});

function submit(id: string, target = 'a', token = 'agent-a') {
  return api.call({
    method: 'POST',
    path: '/v1/operations',
    token,
    key: id,
    body: { tool: 'test.effect', arguments: { target } },
  });
}

describe('GET /v1/operations/{id}', () => {
  it('200 with the operation, for every role of the tenant; arguments are not included by default', async () => {
    await submit('op-1');
    for (const token of ['agent-a', 'approver-a', 'operator-a']) {
      const res = await api.call({ path: '/v1/operations/op-1', token });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ operation_id: 'op-1', state: 'succeeded', replayed: false });
      expect(res.body.arguments).toBeUndefined();
    }
  });

  it('another tenant gets 404 not_found, exactly as for an ID nobody used', async () => {
    await submit('op-1');
    const other = await api.call({ path: '/v1/operations/op-1', token: 'agent-b' });
    const none = await api.call({ path: '/v1/operations/op-none', token: 'agent-a' });
    expect(other.status).toBe(404);
    expect(none.status).toBe(404);
    expect({ ...other.body, request_id: null }).toEqual({ ...none.body, request_id: null });
  });

  it('tenants using the same ID see only their own operation', async () => {
    await submit('shared', 'from-a', 'agent-a');
    await submit('shared', 'from-b', 'agent-b');
    const a = await api.call({ path: '/v1/operations/shared', token: 'agent-a' });
    const b = await api.call({ path: '/v1/operations/shared', token: 'agent-b' });
    expect(a.body.result).toMatchObject({ target: 'from-a' });
    expect(b.body.result).toMatchObject({ target: 'from-b' });
  });

  it('include=arguments shows the normalized arguments to approvers and operators; agents get 403', async () => {
    await submit('op-1', 'secret-target');
    for (const token of ['approver-a', 'operator-a']) {
      const res = await api.call({ path: '/v1/operations/op-1', token, query: [['include', 'arguments']] });
      expect(res.status).toBe(200);
      expect(res.body.arguments).toEqual({ target: 'secret-target' });
    }
    const agent = await api.call({
      path: '/v1/operations/op-1',
      token: 'agent-a',
      query: [['include', 'arguments']],
    });
    expect(agent.status).toBe(403);
    expect(agent.body.code).toBe('forbidden');
    expect(agent.raw.body).not.toContain('secret-target');
  });

  it('include=history shows the transitions; an unknown include or a repeated parameter is 400', async () => {
    await submit('op-1');
    const res = await api.call({ path: '/v1/operations/op-1', query: [['include', 'history']] });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.history)).toBe(true);
    for (const query of [
      [['include', 'secrets']],
      [
        ['include', 'history'],
        ['include', 'history'],
      ],
      [['expand', 'all']],
    ] as [string, string][][]) {
      const bad = await api.call({ path: '/v1/operations/op-1', query });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('validation_failed');
    }
  });

  it('an invalid or badly encoded ID in the path is 400 idempotency_key_invalid', async () => {
    for (const path of [
      '/v1/operations/%E0%A4%A',
      '/v1/operations/a%20b',
      '/v1/operations/%C3%A9',
      `/v1/operations/${'k'.repeat(256)}`,
    ]) {
      const res = await api.call({ path });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('idempotency_key_invalid');
    }
  });
});

describe('GET /v1/operations (the reconciliation queue)', () => {
  async function makeUncertain(ids: string[]) {
    for (const id of ids) {
      tool.next({ kind: 'uncertain', code: 'reset_after_send' });
      await submit(id);
      api.ledger.advance(10);
    }
  }

  it('lists the tenant’s unresolved operations newest first, with an opaque cursor', async () => {
    await makeUncertain(['u-1', 'u-2', 'u-3']);
    await submit('done');
    await submit('other', 'x', 'agent-b');
    const first = await api.call({ path: '/v1/operations', token: 'operator-a', query: [['limit', '2']] });
    expect(first.status).toBe(200);
    const ops = first.body.operations as { operation_id: string; state: string }[];
    expect(ops.map((o) => o.operation_id)).toEqual(['u-3', 'u-2']);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await api.call({
      path: '/v1/operations',
      token: 'operator-a',
      query: [
        ['limit', '2'],
        ['cursor', first.body.next_cursor as string],
      ],
    });
    expect((second.body.operations as { operation_id: string }[]).map((o) => o.operation_id)).toEqual([
      'u-1',
    ]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('filters by state', async () => {
    await makeUncertain(['u-1']);
    const none = await api.call({
      path: '/v1/operations',
      token: 'operator-a',
      query: [['state', 'queued']],
    });
    expect(none.body.operations).toEqual([]);
    const some = await api.call({
      path: '/v1/operations',
      token: 'operator-a',
      query: [['state', 'uncertain']],
    });
    expect((some.body.operations as unknown[]).length).toBe(1);
  });

  it('agents and approvers cannot list (403)', async () => {
    for (const token of ['agent-a', 'approver-a']) {
      const res = await api.call({ path: '/v1/operations', token });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
  });

  it('a bad limit, state, tool, time or cursor is 400 validation_failed', async () => {
    for (const query of [
      [['limit', '0']],
      [['limit', 'ten']],
      [['state', 'finished']],
      [['state', 'succeeded,bogus']],
      [['tool', 'Not A Tool']],
      [['until', '2026-11-29']],
      [['cursor', 'not-a-cursor!']],
    ] as [string, string][][]) {
      const res = await api.call({ path: '/v1/operations', token: 'operator-a', query });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
  });

  it('an empty cursor is 400 validation_failed naming cursor: the listing never issues one', async () => {
    await makeUncertain(['u-1']);
    const res = await api.call({ path: '/v1/operations', token: 'operator-a', query: [['cursor', '']] });
    expect(res.status).toBe(400);
    expect(res.headers['Content-Type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ code: 'validation_failed', issues: [{ path: 'cursor' }] });
  });

  it('a forged cursor is 400 validation_failed naming cursor, never a 5xx: each of these once reached the store', async () => {
    await makeUncertain(['u-1', 'u-2']);
    const page = await api.call({ path: '/v1/operations', token: 'operator-a', query: [['limit', '1']] });
    const issued = JSON.parse(
      Buffer.from(page.body.next_cursor as string, 'base64url').toString('utf8'),
    ) as Record<string, unknown>;
    expect(Object.keys(issued).sort()).toEqual(['pk', 'sk', 'unresolved_at', 'unresolved_tenant']);
    const forge = (change: Record<string, unknown>) =>
      Buffer.from(JSON.stringify({ ...issued, ...change })).toString('base64url');
    const forged: [string, string][] = [
      ['empty sk', forge({ sk: '' })],
      ['3,000-byte pk', forge({ pk: `acme#${'x'.repeat(3000)}` })],
      ['unresolved_at 1e300', forge({ unresolved_at: 1e300 })],
      ['unresolved_at as a string', forge({ unresolved_at: String(issued.unresolved_at) })],
      ['pk as a number', forge({ pk: 42 })],
      ['sk as an object', forge({ sk: { S: 'op' } })],
      ['another tenant’s key', forge({ pk: 'other#u-1', unresolved_tenant: 'other' })],
      ['another tenant’s item under this tenant’s index key', forge({ pk: 'other#u-1' })],
      ['an empty operation ID', forge({ pk: 'acme#' })],
      ['a negative position', forge({ unresolved_at: -1 })],
      ['base64url with a stray character', `${page.body.next_cursor as string}*`],
      ['an over-long cursor', 'A'.repeat(5000)],
    ];
    for (const [name, cursor] of forged) {
      const { result: res, lines } = await captureOutput(() =>
        api.call({ path: '/v1/operations', token: 'operator-a', query: [['cursor', cursor]] }),
      );
      expect(res.status, name).toBe(400);
      expect(res.body, name).toMatchObject({ code: 'validation_failed', issues: [{ path: 'cursor' }] });
      expect(lines.join('\n'), name).not.toContain('ValidationException');
    }
    // The cursor the API issued still pages on.
    const next = await api.call({
      path: '/v1/operations',
      token: 'operator-a',
      query: [['cursor', page.body.next_cursor as string]],
    });
    expect(next.status).toBe(200);
    expect((next.body.operations as { operation_id: string }[]).map((o) => o.operation_id)).toEqual(['u-1']);
  });
});

describe('GET /v1/tools', () => {
  it('lists the tools with their JSON Schemas and flags, for any role', async () => {
    for (const token of ['agent-a', 'approver-a', 'operator-a']) {
      const res = await api.call({ path: '/v1/tools', token });
      expect(res.status).toBe(200);
      const tools = res.body.tools as { name: string; input_schema: { type: string } }[];
      expect(tools).toHaveLength(1);
      expect(tools[0]).toMatchObject({
        name: 'test.effect',
        effect: 'write',
        requires_approval: false,
        input_schema: { type: 'object' },
      });
    }
  });
});

describe('routing and authentication', () => {
  it('an unknown route is 404 not_found', async () => {
    for (const path of [
      '/v2/operations',
      '/v1/operations/a/b/c',
      '/v1/operations/',
      '/',
      '/v1/operations/x/approve',
    ]) {
      const res = await api.call({ path });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it('a wrong method is 405 method_not_allowed with Allow', async () => {
    const cases: [TestRequest, string][] = [
      [{ method: 'DELETE', path: '/v1/operations/op-1' }, 'GET'],
      [{ method: 'PUT', path: '/v1/operations' }, 'POST, GET'],
      [{ method: 'GET', path: '/v1/operations/op-1/approval' }, 'POST'],
      [{ method: 'POST', path: '/v1/tools' }, 'GET'],
    ];
    for (const [request, allow] of cases) {
      const res = await api.call(request);
      expect(res.status).toBe(405);
      expect(res.body.code).toBe('method_not_allowed');
      expect(res.headers.Allow).toBe(allow);
    }
  });

  it('no, malformed or unknown credentials are 401 unauthenticated with WWW-Authenticate', async () => {
    const cases: TestRequest[] = [
      { path: '/v1/tools', token: null },
      { path: '/v1/tools', token: 'nope' },
      { path: '/v1/tools', token: null, headers: [['Authorization', 'Basic YWdlbnQtYTp4']] },
      { path: '/v1/tools', token: null, headers: [['Authorization', 'agent-a']] },
      {
        path: '/v1/tools',
        token: null,
        headers: [
          ['Authorization', 'Bearer agent-a'],
          ['Authorization', 'Bearer agent-a'],
        ],
      },
      { path: '/v1/tools', token: 'agent-a\r\nX-Evil: 1' },
    ];
    for (const request of cases) {
      const res = await api.call(request);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthenticated');
      expect(res.headers['WWW-Authenticate']).toBe('Bearer');
      expect(res.raw.body).not.toContain('agent-a');
      expect(JSON.stringify(res.raw.headers)).not.toContain('X-Evil');
    }
  });

  it('the Authorization scheme and header name are case-insensitive', async () => {
    const res = await api.call({
      path: '/v1/tools',
      token: null,
      headers: [['authorization', 'bearer agent-a']],
    });
    expect(res.status).toBe(200);
  });

  it('an agent cannot approve, resolve or list', async () => {
    const digest = `v1:${'0'.repeat(64)}`;
    const approve = await api.call({
      method: 'POST',
      path: '/v1/operations/x/approval',
      body: { decision: 'approve', arguments_digest: digest },
    });
    const resolve = await api.call({
      method: 'POST',
      path: '/v1/operations/x/resolution',
      body: { outcome: 'applied', attempt: 1 },
    });
    const list = await api.call({ path: '/v1/operations' });
    expect([approve.status, resolve.status, list.status]).toEqual([403, 403, 403]);
  });

  it('approvers and operators cannot submit (403)', async () => {
    for (const token of ['approver-a', 'operator-a']) {
      const res = await submit('op-x', 'a', token);
      expect(res.status).toBe(403);
    }
    expect(await api.recordCount()).toBe(0);
  });
});

describe('every response', () => {
  it('carries Cache-Control: no-store and the right Content-Type; problems carry type, title, status, code', async () => {
    await submit('op-1');
    const requests: TestRequest[] = [
      { path: '/v1/operations/op-1' },
      { path: '/v1/tools' },
      { path: '/v1/nothing' },
      { path: '/v1/tools', token: null },
      { method: 'PATCH', path: '/v1/tools' },
      { method: 'POST', path: '/v1/operations', key: 'k', body: '{' },
    ];
    for (const request of requests) {
      const res = await api.call(request);
      expect(res.headers['Cache-Control']).toBe('no-store');
      if (res.status >= 400) {
        expect(res.headers['Content-Type']).toBe('application/problem+json');
        expect(res.body).toMatchObject({ status: res.status });
        expect(typeof res.body.type).toBe('string');
        expect(typeof res.body.title).toBe('string');
        expect(typeof res.body.code).toBe('string');
      } else {
        expect(res.headers['Content-Type']).toBe('application/json');
      }
    }
  });

  it('flushes metrics once per invocation, also on errors', async () => {
    const flush = vi.spyOn(api.ledger.metrics, 'flush');
    await submit('op-1');
    await api.call({ path: '/v1/tools', token: null });
    await api.call({ path: '/nowhere' });
    expect(flush).toHaveBeenCalledTimes(3);
  });

  it('an unexpected error is 500 internal_error with no message, logged once by code and class', async () => {
    vi.spyOn(api.ledger.store, 'get').mockRejectedValue(new TypeError('canary-internal at /var/task/x.js:1'));
    const { result: res, lines } = await captureOutput(() => api.call({ path: '/v1/operations/op-1' }));
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: 'internal_error', status: 500 });
    expect(res.body.detail).toBeUndefined();
    expect(res.raw.body).not.toContain('canary-internal');
    const errors = lines.filter((l) => l.includes('"level":"ERROR"'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('"code":"internal_error"');
    expect(errors[0]).toContain('"error_class":"TypeError"');
    expect(errors[0]).toContain('"route":"GET /v1/operations/{id}"');
    expect(lines.join('')).not.toContain('canary-internal');
  });
});
