import { mkdtemp, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareCall } from '../../functions/engine/prepare-call';
import { createExecutorHandler } from '../../functions/queue/executor-handler';
import { builtinTools } from '../../functions/tools/builtin';
import { buildRuntime } from '../../functions/wiring';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { getOperation, postOperation } from '../e2e/api-client';
import { sqsRecord } from '../fuzz/executor-harness';
import { startUpstreamServer, type UpstreamServer } from '../mcp/upstream-server';
import { useDynalite } from '../support/dynalite';
import { startWorld } from './world';

/**
 * The gateway's upstream MCP servers are the deployment's own endpoints: a tool must never reach them,
 * or an agent could post a JSON-RPC `tools/call` straight to an upstream and run a tool the gateway
 * holds for approval, with no approval and no record. The upstream here is a real MCP server built
 * with the official SDK that, like many hand-written servers, does not insist on `Accept:
 * text/event-stream`; its `wipe` tool says `destructiveHint`, so the trusted gateway holds it for an
 * approver.
 */

const TOKENS = 'gw-agent=acme:agent+operator,gw-approver=acme:approver';

/** An IPv4 address of this machine that is not loopback, if it has one. */
function lanAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) if (entry.family === 'IPv4' && !entry.internal) return entry.address;
  }
  return undefined;
}

/** The JSON-RPC request an attacker posts to the upstream in place of the gateway. */
const wipeCall = (label: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'wipe', arguments: { label } },
});

describe('local mode: webhook.post cannot reach the gateway’s upstream MCP servers', () => {
  let upstream: UpstreamServer;
  let stack: LocalStackProcess;
  let dataDir: string;

  beforeAll(async () => {
    upstream = await startUpstreamServer({ lenientAccept: true });
    dataDir = await mkdtemp(path.join(tmpdir(), 'tool-ledger-gateway-ssrf-'));
    stack = await startLocalStack({
      dataDir,
      // The default allow list: every loopback port.
      env: { TOOL_LEDGER_TOKENS: TOKENS, TOOL_LEDGER_MCP_UPSTREAMS: `files=${upstream.url};trusted` },
    });
  });

  afterAll(async () => {
    if (stack) {
      await stack.kill();
      expect(groupAlive(stack.pgid)).toBe(false);
    }
    await upstream?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('the gateway holds the destructive upstream tool for an approver', async () => {
    const held = await postOperation(stack.api, {
      token: 'gw-agent',
      key: 'gw-held-1',
      body: { tool: 'files.wipe', arguments: { label: 'all' } },
    });
    expect(held.json).toMatchObject({ state: 'awaiting_approval' });
    expect(upstream.calls('wipe')).toBe(0);
  });

  it('a tools/call posted straight to the upstream, by any name of this machine, is refused with no record and no effect', async () => {
    const port = new URL(upstream.url).port;
    const lan = lanAddress();
    const urls = [
      upstream.url,
      `http://localhost:${port}/mcp`,
      `http://127.0.0.1:${port}/other`,
      `http://[::ffff:127.0.0.1]:${port}/mcp`,
      ...(lan === undefined ? [] : [`http://${lan}:${port}/mcp`]),
    ];
    for (const [index, url] of urls.entries()) {
      const key = `gw-attack-${index}`;
      const res = await postOperation(stack.api, {
        token: 'gw-agent',
        key,
        body: { tool: 'webhook.post', arguments: { url, json: wipeCall('all') } },
      });
      expect(res.status, url).toBe(400);
      expect(res.json, url).toMatchObject({ code: 'validation_failed' });
      expect((await getOperation(stack.api, key, 'gw-agent')).status, url).toBe(404);
    }
    expect(upstream.calls('wipe')).toBe(0);
  });
});

describe('on AWS: the handlers refuse the upstreams whatever webhookAllow says', () => {
  it('an allow list naming the upstream’s own origin still cannot reach it', () => {
    const runtime = buildRuntime(builtinTools, {
      TOOL_LEDGER_TABLE_NAME: 'ledger',
      TOOL_LEDGER_WEBHOOK_ALLOW: 'https://mcp.example.com,https://hooks.example.com',
      TOOL_LEDGER_MCP_UPSTREAMS: 'files=https://mcp.example.com/mcp;trusted',
    });
    const attempt = (url: string) => () =>
      prepareCall(runtime.deps.tools, 'aws-1', 'webhook.post', { url, json: wipeCall('all') });
    expect(attempt('https://mcp.example.com/mcp')).toThrow(/service endpoint of the ledger itself/);
    expect(attempt('https://MCP.example.com:443/elsewhere')).toThrow(/service endpoint of the ledger itself/);
    expect(attempt('https://hooks.example.com/ok')).not.toThrow();
  });
});

describe('an upstream that changes its hints between the API’s listing and the executor’s', () => {
  const db = useDynalite();
  let upstream: UpstreamServer;

  beforeAll(async () => {
    upstream = await startUpstreamServer();
  });
  afterAll(async () => {
    await upstream?.close();
  });

  it('an approved destructive call is never run unclaimed by an executor that lists the tool as read-only: an operator decides', async () => {
    const env = { TOOL_LEDGER_MCP_UPSTREAMS: `files=${upstream.url};trusted` };
    // The API lists `shift` as destructive (held for approval)...
    const api = await startWorld(db, builtinTools, env);
    await api.runtime.refreshTools(); // what the API Lambda does at each invocation
    const held = await api.call({
      path: '/v1/operations',
      key: 'gw-shift-1',
      body: { tool: 'files.shift', arguments: { label: 'prod' } },
    });
    expect(held.body).toMatchObject({ state: 'awaiting_approval' });
    const approved = await api.call({
      path: '/v1/operations/gw-shift-1/approval',
      token: 'approver-a',
      body: { decision: 'approve', arguments_digest: held.body.arguments_digest },
    });
    expect(approved.body).toMatchObject({ state: 'queued' });
    // ...then the upstream lists it as read-only, and a fresh executor (another Lambda) sees only that.
    upstream.setShiftHints({ readOnlyHint: true });
    const executorRuntime = buildRuntime(builtinTools, {
      TOOL_LEDGER_LOCAL: 'true',
      TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
      TOOL_LEDGER_TABLE_NAME: api.table,
      TOOL_LEDGER_QUEUE_TENANTS: JSON.stringify(['acme']),
      ...env,
    });
    executorRuntime.deps.queue = api.queue;
    const executor = createExecutorHandler(() => executorRuntime);
    const context = { awsRequestId: 'x', functionName: 'executor', getRemainingTimeInMillis: () => 60_000 };
    for (let pass = 0; pass < 3; pass++) {
      const messages = api.queue.messages.splice(0);
      if (messages.length > 0) {
        await executor(
          { Records: messages.map((m, i) => sqsRecord(JSON.stringify(m), `shift-${pass}-${i}`)) },
          context as unknown as Context,
        );
      }
      // The reconciler's later passes re-send what is still queued.
      api.advance(10 * 60_000);
      await api.reconcile();
    }
    expect(upstream.calls('shift')).toBe(0);
    const record = await api.call({ path: '/v1/operations/gw-shift-1' });
    expect(record.body).toMatchObject({ state: 'needs_reconciliation', error: { code: 'policy_changed' } });
  });
});
