import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { META_REPLAYED } from '../../functions/mcp/protocol';
import { type TestApi, testApi } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { body, callWithId, handlerFetch, mcpClient } from './support';

/**
 * `POST /mcp` through the API Lambda handler itself: the official SDK client's requests become API
 * Gateway REST proxy events, so routing, authentication, roles, body checks and the web-standard
 * transport are exercised exactly as deployed, on a dynalite ledger.
 */

const db = useDynalite();
let api: TestApi;
let tool: ScriptedTool;
let approval: ScriptedTool;
let client: Client;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  approval = new ScriptedTool('test.approved', { requiresApproval: true });
  api = await testApi(db.client, [tool.tool, approval.tool]);
  client = await mcpClient('http://api.invalid/mcp', 'agent-a', handlerFetch(api.handler));
});
afterEach(async () => {
  await client.close();
});

describe('POST /mcp through the API handler', () => {
  it('lists the tools with their JSON Schemas and derived annotations', async () => {
    const { tools } = await client.listTools();
    const effect = tools.find((t) => t.name === 'test.effect');
    expect(effect?.inputSchema).toMatchObject({ type: 'object', properties: { target: { type: 'string' } } });
    expect(effect?.annotations).toEqual({ readOnlyHint: false });
    expect(tools.find((t) => t.name === 'test.approved')?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
    });
  });

  it('runs a call once and replays it for the same operation ID, marked as a replay', async () => {
    const first = await callWithId(client, 'test.effect', { target: 'a' }, 'mcp-h-1');
    expect(first.isError).toBe(false);
    expect(body(first)).toMatchObject({ operation_id: 'mcp-h-1', state: 'succeeded', replayed: false });
    expect(first._meta?.[META_REPLAYED]).toBe(false);
    const again = await callWithId(client, 'test.effect', { target: 'a' }, 'mcp-h-1');
    expect(body(again)).toMatchObject({ state: 'succeeded', replayed: true, result: body(first).result });
    expect(again._meta?.[META_REPLAYED]).toBe(true);
    expect(JSON.stringify(again.content)).toContain('Do not repeat');
    expect(tool.effects).toHaveLength(1);
  });

  it('answers a 150 KB result whole, and its replay carries the same result', async () => {
    const result = {
      log: Array.from({ length: 3_500 }, (_, i) => ({
        line: i,
        text: `step ${i % 17} passed in ${i % 7} ms`,
      })),
    };
    expect(JSON.stringify(result).length).toBeGreaterThan(128 * 1024);
    tool.next({ kind: 'succeed', result });
    const first = await callWithId(client, 'test.effect', { target: 'big' }, 'mcp-h-big');
    expect(body(first).result).toEqual(result);
    const again = await callWithId(client, 'test.effect', { target: 'big' }, 'mcp-h-big');
    expect(body(again)).toMatchObject({ replayed: true });
    expect(JSON.stringify(body(again).result)).toBe(JSON.stringify(result));
    expect(tool.effects).toHaveLength(1);
  });

  it('refuses a write tool without an operation ID and creates no record', async () => {
    const result = await callWithId(client, 'test.effect', { target: 'a' });
    expect(result.isError).toBe(true);
    expect(body(result)).toMatchObject({ code: 'idempotency_key_missing' });
    expect(tool.starts).toHaveLength(0);
    expect(await api.recordCount()).toBe(0);
  });

  it('tells the orchestrator what to set over MCP (_meta), not the HTTP header, and keeps the code', async () => {
    const result = await callWithId(client, 'test.effect', { target: 'a' });
    const [said] = result.content as { type: string; text: string }[];
    expect(said?.text).toMatch(
      /^The operation ID \(_meta\["io\.tool-ledger\/operation-id"\]\) is missing \(idempotency_key_missing\)\./,
    );
    expect(said?.text).toContain('Set _meta["io.tool-ledger/operation-id"] to a stable operation ID');
    expect(JSON.stringify(result.content)).not.toContain('Idempotency-Key');
    expect(body(result)).toMatchObject({
      code: 'idempotency_key_missing',
      title: 'The operation ID (_meta["io.tool-ledger/operation-id"]) is missing',
      status: 400,
    });
  });

  it('refuses tools/call to a caller without the agent role, but lets it list tools', async () => {
    const operator = await mcpClient('http://api.invalid/mcp', 'operator-a', handlerFetch(api.handler));
    try {
      expect((await operator.listTools()).tools.length).toBe(2);
      const result = await callWithId(operator, 'test.effect', { target: 'a' }, 'mcp-h-2');
      expect(body(result)).toMatchObject({ code: 'forbidden' });
      expect(await api.recordCount()).toBe(0);
    } finally {
      await operator.close();
    }
  });

  it('answers an unauthenticated request 401 before any MCP handling', async () => {
    const fetch = handlerFetch(api.handler);
    const response = await fetch('http://api.invalid/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { code: string }).code).toBe('unauthenticated');
  });

  it('runs a read tool called without an operation ID, under an ID of its own', async () => {
    const reader = new ScriptedTool('test.read', { effect: 'read' });
    const readApi = await testApi(db.client, [reader.tool]);
    const readClient = await mcpClient('http://api.invalid/mcp', 'agent-a', handlerFetch(readApi.handler));
    try {
      const result = await callWithId(readClient, 'test.read', { target: 'a' });
      expect(result.isError).toBe(false);
      expect(body(result)).toMatchObject({ state: 'succeeded', tool: 'test.read' });
      expect(String(body(result).operation_id)).toMatch(/^mcp-read:/);
      expect(reader.starts).toHaveLength(1);
    } finally {
      await readClient.close();
    }
  });

  it('refuses a JSON-RPC batch (MCP dropped them) with Invalid Request and runs none of its calls', async () => {
    const call = (n: number) => ({
      jsonrpc: '2.0',
      id: n,
      method: 'tools/call',
      params: {
        name: 'test.effect',
        arguments: { target: `b${n}` },
        _meta: { 'io.tool-ledger/operation-id': `batch-${n}` },
      },
    });
    const response = await handlerFetch(api.handler)('http://api.invalid/mcp', {
      method: 'POST',
      headers: {
        authorization: 'Bearer agent-a',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify([call(1), call(2), call(3)]),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(tool.starts).toHaveLength(0);
  });

  it('answers GET /mcp 405: the endpoint is stateless and opens no event stream', async () => {
    const response = await handlerFetch(api.handler)('http://api.invalid/mcp', {
      method: 'GET',
      headers: { authorization: 'Bearer agent-a', accept: 'text/event-stream' },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('accepts and refuses argument depths exactly as POST /v1/operations does', async () => {
    const nested = (levels: number): unknown => (levels === 0 ? 'x' : [nested(levels - 1)]);
    for (const levels of [30, 31, 32, 33]) {
      const args = { target: 'a', value: nested(levels) };
      const http = await api.call({
        method: 'POST',
        path: '/v1/operations',
        key: `depth-http-${levels}`,
        body: { tool: 'test.effect', arguments: args },
      });
      const mcp = await callWithId(client, 'test.effect', args, `depth-mcp-${levels}`);
      expect([levels, mcp.isError ? 'refused' : 'ran']).toEqual([
        levels,
        http.status === 201 ? 'ran' : 'refused',
      ]);
    }
  });

  it('reserves an approval tool as awaiting_approval and runs nothing', async () => {
    const result = await callWithId(client, 'test.approved', { target: 'a' }, 'mcp-h-3');
    expect(result.isError).toBe(false);
    expect(body(result)).toMatchObject({ state: 'awaiting_approval' });
    expect(JSON.stringify(result.content)).toContain('Waiting for approval');
    expect(approval.starts).toHaveLength(0);
  });
});
