import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolLedgerMcpClient } from '../../client/mcp';
import { META_REPLAYED } from '../../functions/mcp/protocol';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { getOperation, waitForOperation } from '../e2e/api-client';
import { body, callWithId, mcpClient } from './support';
import { startUpstreamServer, type UpstreamServer } from './upstream-server';

/**
 * The MCP gateway of local mode: a real upstream MCP server built with the SDK (its tools count their
 * calls, one hangs, one fails), named twice in `TOOL_LEDGER_MCP_UPSTREAMS`, once untrusted (`up`) and
 * once trusted (`trusted`), and reached only through the ledger's `/mcp` by the SDK client.
 */

let upstream: UpstreamServer;
let stack: LocalStackProcess;
let dataDir: string;
let client: Client;
let seq = 0;

function id(label: string): string {
  seq += 1;
  return `gw-${label}-${seq}-${Date.now()}`;
}

/** A fetch that loses the response of the first `tools/call` after the ledger has answered it. */
function losingFirstCall(): FetchLike {
  let lost = false;
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!lost && typeof init?.body === 'string' && init.body.includes('"tools/call"')) {
      lost = true;
      await response.text();
      throw new TypeError('fetch failed: the response was lost');
    }
    return response;
  };
}

beforeAll(async () => {
  upstream = await startUpstreamServer();
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-mcp-gateway-'));
  stack = await startLocalStack({
    dataDir,
    env: {
      TOOL_LEDGER_MCP_UPSTREAMS: `up=${upstream.url};timeout=1500,trusted=${upstream.url};trusted;timeout=1500`,
      TOOL_LEDGER_RECONCILE_EVERY_MS: '300',
      TOOL_LEDGER_RETRY_BASE_MS: '100',
    },
  });
  client = await mcpClient(`${stack.api}/mcp`, stack.tokens.agent);
});

afterAll(async () => {
  await client?.close();
  await stack?.kill();
  await upstream?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('the MCP gateway in front of an upstream server', () => {
  it('serves the upstream’s tools as <name>.<tool> with its schemas; hints only from the trusted one', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('up.count')?.inputSchema).toMatchObject({
      type: 'object',
      properties: { label: { type: 'string' }, times: { type: 'integer' } },
    });
    expect(byName.get('up.peek')?.annotations).toEqual({ readOnlyHint: false });
    expect(byName.get('up.wipe')?.annotations).toEqual({ readOnlyHint: false });
    expect(byName.get('trusted.peek')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get('trusted.wipe')?.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.has('workspace.write_file')).toBe(true);
  });

  it('one upstream effect per operation under client retries, with the downstream key passed upstream', async () => {
    const lossy = await mcpClient(`${stack.api}/mcp`, stack.tokens.agent, losingFirstCall());
    try {
      const ledger = new ToolLedgerMcpClient(lossy);
      const call = {
        name: 'up.count',
        arguments: { label: 'retries' },
        position: { agentRunId: id('run'), step: 1, callIndex: 0 },
      };
      const result = await ledger.callTool(call);
      // The first answer was lost; the helper asked again with the same operation ID and got the replay.
      expect(body(result)).toMatchObject({ state: 'succeeded', replayed: true });
      expect(result._meta?.[META_REPLAYED]).toBe(true);
      expect(body(result).result).toMatchObject({ structuredContent: { count: 1 } });
      expect(body(await ledger.callTool(call))).toMatchObject({ state: 'succeeded', replayed: true });
      expect(upstream.calls('count')).toBe(1);
      const [key] = upstream.keys('count');
      expect(key).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(key).not.toBe(body(result).operation_id);
    } finally {
      await lossy.close();
    }
  });

  it('arguments that fail the upstream’s schema are refused before anything is sent', async () => {
    const before = upstream.calls('count');
    const refused = await callWithId(client, 'up.count', { label: 5 }, id('bad'));
    expect(refused.isError).toBe(true);
    expect(body(refused)).toMatchObject({ code: 'validation_failed' });
    expect(upstream.calls('count')).toBe(before);
  });

  it('a lost upstream response ends uncertain, then with an operator, and is never sent again', async () => {
    const op = id('hang');
    const first = await callWithId(client, 'up.hang', { label: 'lost' }, op);
    expect(body(first)).toMatchObject({ state: 'uncertain' });
    expect(first.isError).toBe(false);
    expect(JSON.stringify(first.content)).toContain('Do not retry with a new operation ID');
    const retry = await callWithId(client, 'up.hang', { label: 'lost' }, op);
    expect(['uncertain', 'needs_reconciliation']).toContain(body(retry).state);
    await waitForOperation(stack.api, op, (o) => o.state === 'needs_reconciliation', {
      token: stack.tokens.agent,
    });
    const later = await callWithId(client, 'up.hang', { label: 'lost' }, op);
    expect(body(later)).toMatchObject({ state: 'needs_reconciliation' });
    expect(upstream.calls('hang')).toBe(1);
  });

  it('a trusted upstream’s idempotentHint lets an uncertain call run again, with the same downstream key', async () => {
    const op = id('upsert');
    expect(body(await callWithId(client, 'trusted.upsert', { label: 'again' }, op))).toMatchObject({
      state: 'uncertain',
    });
    // The reconciler makes it failed_retryable and the executor runs the next attempt.
    await upstream.waitForCall('upsert', 2);
    const keys = upstream.keys('upsert');
    expect(new Set(keys).size).toBe(1);
  });

  it('a tool result with isError is a terminal failure, replayed as one', async () => {
    const op = id('fail');
    const first = await callWithId(client, 'up.fail', { label: 'x' }, op);
    expect(first.isError).toBe(true);
    expect(body(first)).toMatchObject({ state: 'failed_terminal', error: { code: 'upstream_tool_error' } });
    const again = await callWithId(client, 'up.fail', { label: 'x' }, op);
    expect(again.isError).toBe(true);
    expect(body(again)).toMatchObject({ state: 'failed_terminal', replayed: true });
    expect(upstream.calls('fail')).toBe(1);
  });

  it('an untrusted upstream’s readOnlyHint changes nothing: the tool is a plain write tool', async () => {
    const refused = await callWithId(client, 'up.peek', { label: 'x' });
    expect(body(refused)).toMatchObject({ code: 'idempotency_key_missing' });
    expect(upstream.calls('peek')).toBe(0);
    const op = id('peek');
    expect(body(await callWithId(client, 'up.peek', { label: 'x' }, op))).toMatchObject({
      state: 'succeeded',
    });
    // A write is an operation of the ledger (a read would not be found here).
    expect((await getOperation(stack.api, op, stack.tokens.agent)).json).toMatchObject({
      state: 'succeeded',
      tool: 'up.peek',
    });
    // The same tool from the trusted upstream is a read: it runs without an operation ID.
    const read = await callWithId(client, 'trusted.peek', { label: 'x' });
    expect(body(read)).toMatchObject({ state: 'succeeded' });
    expect(upstream.calls('peek')).toBe(2);
  });

  it('an untrusted destructiveHint asks for no approval; a trusted one does', async () => {
    expect(body(await callWithId(client, 'up.wipe', { label: 'x' }, id('wipe')))).toMatchObject({
      state: 'succeeded',
    });
    const waiting = await callWithId(client, 'trusted.wipe', { label: 'x' }, id('wipe'));
    expect(body(waiting)).toMatchObject({ state: 'awaiting_approval' });
    expect(upstream.calls('wipe')).toBe(1);
  });
});
