import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_META_REPLAYED, ToolLedgerMcpClient } from '../../client/mcp';
import { META_REPLAYED } from '../../functions/mcp/protocol';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { send, waitForOperation } from '../e2e/api-client';
import { body, callWithId, mcpClient } from './support';

/**
 * The MCP front door of local mode, end to end: `npm start` as a child process, spoken to only by the
 * official SDK client over Streamable HTTP, with a counting webhook target and the workspace on disk
 * as the effects.
 */

let stack: LocalStackProcess;
let target: WebhookTarget;
let dataDir: string;
let client: Client;
let dynamo: DynamoDBClient;
let seq = 0;

function id(label: string): string {
  seq += 1;
  return `mcp-${label}-${seq}-${Date.now()}`;
}

function hook(path: string, json: unknown = { n: 1 }) {
  return { url: `${target.origin}${path}`, json };
}

/** Whether the workspace holds the file (under the tenant's own root, or the shared one). */
async function inWorkspace(file: string): Promise<boolean> {
  for (const path of [join(dataDir, 'workspace', 'local', file), join(dataDir, 'workspace', file)]) {
    if (
      await stat(path).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

async function recordCount(): Promise<number> {
  const out = await dynamo.send(
    new ScanCommand({ TableName: stack.table, Select: 'COUNT', ConsistentRead: true }),
  );
  return out.Count ?? 0;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-mcp-local-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '300' } });
  client = await mcpClient(`${stack.api}/mcp`, stack.tokens.agent);
  dynamo = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});

afterAll(async () => {
  await client?.close();
  dynamo?.destroy();
  await stack?.kill();
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('the MCP front door of local mode', () => {
  it('lists every tool with its JSON Schema and annotations', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'workspace.write_file',
        'workspace.append_line',
        'workspace.delete_file',
        'webhook.post',
      ]),
    );
    const write = tools.find((t) => t.name === 'workspace.write_file');
    expect(write?.inputSchema).toMatchObject({ type: 'object', required: ['path', 'content'] });
    expect(write?.annotations).toEqual({ readOnlyHint: false });
    expect(tools.find((t) => t.name === 'workspace.delete_file')?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
    });
  });

  it('runs a call once; a retry with the same operation ID replays it and says so', async () => {
    const ledger = new ToolLedgerMcpClient(client);
    const position = { agentRunId: id('run'), step: 1, callIndex: 0 };
    const call = { name: 'webhook.post', arguments: hook('/ok/once'), position };
    const first = await ledger.callTool(call);
    expect(first.isError).toBe(false);
    expect(body(first)).toMatchObject({ state: 'succeeded', replayed: false, tool: 'webhook.post' });
    expect(first._meta?.[META_REPLAYED]).toBe(false);
    expect(JSON.stringify(first.content)).toContain('Done');
    const retry = await ledger.callTool(call);
    expect(body(retry)).toMatchObject({ state: 'succeeded', replayed: true, result: body(first).result });
    expect(retry._meta?.[MCP_META_REPLAYED]).toBe(true);
    expect(JSON.stringify(retry.content)).toContain('this is the original result. Do not repeat the action.');
    expect(target.effects('/ok/once')).toBe(1);
    // The same operation, as the HTTP API shows it.
    const read = await send(
      stack.api,
      `/v1/operations/${encodeURIComponent(String(body(first).operation_id))}`,
      {
        headers: { authorization: `Bearer ${stack.tokens.agent}` },
      },
    );
    expect(read.json).toMatchObject({ state: 'succeeded', agent_run_id: position.agentRunId });
  });

  it('the same operation ID with changed arguments is a conflict and runs nothing', async () => {
    const op = id('conflict');
    await callWithId(client, 'webhook.post', hook('/ok/conflict', { n: 1 }), op);
    const changed = await callWithId(client, 'webhook.post', hook('/ok/conflict', { n: 2 }), op);
    expect(changed.isError).toBe(true);
    expect(body(changed)).toMatchObject({ code: 'idempotency_key_reused' });
    expect(JSON.stringify(changed.content)).toContain('Nothing ran');
    expect(target.count('/ok/conflict')).toBe(1);
  });

  it('a write tool called without an operation ID is refused and leaves no record', async () => {
    const before = await recordCount();
    const refused = await callWithId(client, 'webhook.post', hook('/ok/no-id'));
    expect(refused.isError).toBe(true);
    expect(body(refused)).toMatchObject({ code: 'idempotency_key_missing' });
    expect(target.count('/ok/no-id')).toBe(0);
    expect(await recordCount()).toBe(before);
  });

  it('arguments that fail the schema are refused with the field named, and leave no record', async () => {
    const before = await recordCount();
    const refused = await callWithId(
      client,
      'workspace.write_file',
      { path: '../escape', content: 'x' },
      id('bad'),
    );
    expect(body(refused)).toMatchObject({ code: 'validation_failed' });
    expect(JSON.stringify(body(refused).issues)).toContain('$.arguments.path');
    expect(await recordCount()).toBe(before);
  });

  it('an approval tool waits for an approval, then runs once; the retry replays the executor’s result', async () => {
    const file = `${id('doomed')}.txt`;
    await callWithId(client, 'workspace.write_file', { path: file, content: 'bye' }, id('write'));
    const op = id('delete');
    const waiting = await callWithId(client, 'workspace.delete_file', { path: file }, op);
    expect(waiting.isError).toBe(false);
    expect(body(waiting)).toMatchObject({ state: 'awaiting_approval', replayed: false });
    expect(JSON.stringify(waiting.content)).toContain('Waiting for approval');
    const again = await callWithId(client, 'workspace.delete_file', { path: file }, op);
    expect(body(again)).toMatchObject({ state: 'awaiting_approval' });
    expect(await inWorkspace(file)).toBe(true);

    const approved = await send(stack.api, `/v1/operations/${encodeURIComponent(op)}/approval`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', arguments_digest: body(waiting).arguments_digest }),
    });
    expect(approved.status).toBe(200);
    await waitForOperation(stack.api, op, (o) => o.state === 'succeeded', { token: stack.tokens.agent });
    const done = await callWithId(client, 'workspace.delete_file', { path: file }, op);
    expect(body(done)).toMatchObject({ state: 'succeeded', replayed: true });
    expect(await inWorkspace(file)).toBe(false);
  });

  it('a duplicate while the first call is in flight is told it is in progress, and runs nothing', async () => {
    const op = id('inflight');
    const second = await mcpClient(`${stack.api}/mcp`, stack.tokens.agent);
    try {
      const first = callWithId(client, 'webhook.post', hook('/hold/inflight'), op);
      await target.waitForHit('/hold/inflight');
      const duplicate = await callWithId(second, 'webhook.post', hook('/hold/inflight'), op);
      expect(duplicate.isError).toBe(false);
      expect(body(duplicate)).toMatchObject({ state: 'pending', replayed: false });
      expect(JSON.stringify(duplicate.content)).toContain('In progress');
      target.release('inflight');
      expect(body(await first)).toMatchObject({ state: 'succeeded', replayed: false });
      expect(target.count('/hold/inflight')).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('an uncertain outcome says so, and a retry with the same ID never sends the effect again', async () => {
    const op = id('uncertain');
    const first = await callWithId(client, 'webhook.post', hook('/status/503/unsure'), op);
    expect(first.isError).toBe(false);
    expect(body(first)).toMatchObject({ state: 'uncertain' });
    expect(JSON.stringify(first.content)).toContain('Do not retry with a new operation ID');
    const retry = await callWithId(client, 'webhook.post', hook('/status/503/unsure'), op);
    expect(['uncertain', 'needs_reconciliation']).toContain(body(retry).state);
    expect(retry._meta?.[META_REPLAYED]).toBe(false);
    // webhook.post has no reconcile: the reconciler hands it to an operator, never runs it again.
    await waitForOperation(stack.api, op, (o) => o.state === 'needs_reconciliation', {
      token: stack.tokens.agent,
    });
    const later = await callWithId(client, 'webhook.post', hook('/status/503/unsure'), op);
    expect(body(later)).toMatchObject({ state: 'needs_reconciliation' });
    expect(JSON.stringify(later.content)).toContain('an operator must decide');
    expect(target.count('/status/503/unsure')).toBe(1);
  });

  it('terminal failures are errors for the model: a refused effect and a rejected approval', async () => {
    const refused = id('refused');
    const failed = await callWithId(client, 'webhook.post', hook('/status/404/gone'), refused);
    expect(failed.isError).toBe(true);
    expect(body(failed)).toMatchObject({ state: 'failed_terminal', error: { code: 'http_404' } });
    expect(JSON.stringify(failed.content)).toContain('Retrying will not change it');
    const replayed = await callWithId(client, 'webhook.post', hook('/status/404/gone'), refused);
    expect(replayed.isError).toBe(true);
    expect(replayed._meta?.[META_REPLAYED]).toBe(true);
    expect(target.count('/status/404/gone')).toBe(1);

    const op = id('rejected');
    const waiting = await callWithId(client, 'workspace.delete_file', { path: `${op}.txt` }, op);
    expect(waiting.isError).toBe(false);
    const rejected = await send(stack.api, `/v1/operations/${encodeURIComponent(op)}/approval`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'reject', arguments_digest: body(waiting).arguments_digest }),
    });
    expect(rejected.status).toBe(200);
    const after = await callWithId(client, 'workspace.delete_file', { path: `${op}.txt` }, op);
    expect(after.isError).toBe(true);
    expect(body(after)).toMatchObject({ state: 'rejected', replayed: true });
  });

  it('answers each POST with one JSON body, never an event stream, and opens no session', async () => {
    const response = await send(stack.api, '/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.tokens.agent}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(response.json).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { serverInfo: { name: 'tool-ledger' } },
    });
  });
});
