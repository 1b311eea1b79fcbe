import { beforeEach, describe, expect, it } from 'vitest';
import { bearerToken, ToolLedgerClient, ToolLedgerRequestError } from '../../client/index';
import { webhookPost } from '../../functions/tools/webhook-post';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type TestApi, testApi, testContext, toEvent } from './support';

/*
 * A newcomer's typo must be answered with what to fix: the field or parameter by name (when it is a
 * short, plain name, so nothing a caller invented is echoed at length), in the problem's `detail` and in
 * the client's error message. And still nothing is recorded.
 */

const db = useDynalite();
let tool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  api = await testApi(db.client, [tool.tool]);
});

describe('validation problems name the field and the parameter', () => {
  it('an unknown argument is named: unknown field "contents", with its path; no record', async () => {
    const response = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'typo-1',
      body: { tool: 'test.effect', arguments: { target: 'a', contents: 'x' } },
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.detail).toBe(
      'arguments do not match the schema of test.effect: $.arguments.contents: unknown field "contents"',
    );
    expect(response.body.issues).toEqual([
      { path: '$.arguments.contents', message: 'unknown field "contents"' },
    ]);
    expect(await api.recordCount()).toBe(0);
    expect(tool.starts).toHaveLength(0);
  });

  it('an unknown body member is named', async () => {
    const response = await api.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'typo-2',
      body: { tool: 'test.effect', arguments: { target: 'a' }, agent_run: 'r1' },
    });
    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('$.agent_run: unknown field "agent_run"');
    expect(await api.recordCount()).toBe(0);
  });

  it('an unknown query parameter is named, with the ones the route takes', async () => {
    const response = await api.call({
      method: 'GET',
      path: '/v1/operations',
      token: 'operator-a',
      query: [['foo', '1']],
    });
    expect(response.status).toBe(400);
    expect(response.body.detail).toMatch(/^unknown query parameter "foo" \(this route takes: .*limit.*\)$/);
    expect(response.body.issues).toEqual([{ path: 'query.foo', message: 'unknown query parameter' }]);
  });

  it('a parameter name that is not plain is not echoed', async () => {
    const odd = `x${'<'.repeat(50)}`;
    const response = await api.call({
      method: 'GET',
      path: '/v1/operations',
      token: 'operator-a',
      query: [[odd, '1']],
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).not.toContain('<<<');
  });

  it('a refused webhook origin names the setting that allows it (and not the URL)', async () => {
    const hook = webhookPost({ webhookAllow: ['http://127.0.0.1'], local: true });
    const withHook = await testApi(db.client, [hook]);
    const response = await withHook.call({
      method: 'POST',
      path: '/v1/operations',
      key: 'hook-1',
      body: { tool: 'webhook.post', arguments: { url: 'https://secret-host.example/hook', json: {} } },
    });
    expect(response.status).toBe(400);
    expect(response.body.detail).toContain('TOOL_LEDGER_WEBHOOK_ALLOW');
    expect(response.body.detail).toContain('webhookAllow');
    expect(JSON.stringify(response.body)).not.toContain('secret-host');
    expect(await withHook.recordCount()).toBe(0);
  });

  it("the client's error message carries the problem's detail", async () => {
    const client = new ToolLedgerClient({
      endpoint: 'http://ledger.test',
      signer: bearerToken('agent-a'),
      fetch: async (input, init) => {
        const url = new URL(String(input));
        const headers = Object.fromEntries(new Headers(init?.headers).entries());
        const raw = await api.handler(
          toEvent({
            method: init?.method ?? 'GET',
            path: url.pathname,
            key: headers['idempotency-key'] ? headers['idempotency-key'].replace(/^"|"$/g, '') : null,
            body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
          }),
          testContext(),
        );
        return new Response(raw.body, {
          status: raw.statusCode,
          headers: raw.headers as Record<string, string>,
        });
      },
    });
    const error = await client
      .call({ operationId: 'typo-3', tool: 'test.effect', arguments: { target: 'a', contents: 'x' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerRequestError);
    expect((error as Error).message).toBe(
      'tool-ledger refused the request: 400 validation_failed: arguments do not match the schema of test.effect: ' +
        '$.arguments.contents: unknown field "contents"',
    );
  });
});
