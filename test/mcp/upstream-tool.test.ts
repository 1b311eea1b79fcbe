import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AnyTool } from '../../functions/domain/tool';
import { NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../../functions/domain/tool';
import { listUpstreamTools } from '../../functions/mcp/upstream-client';
import { upstreamTool } from '../../functions/mcp/upstream-tool';
import { type McpUpstream, parseUpstreams } from '../../functions/mcp/upstreams';
import { toolContext } from '../tools/tool-context';
import { startUpstreamServer, type UpstreamServer } from './upstream-server';

/**
 * One upstream MCP tool as a ledger tool, against a real SDK server: names, schemas, the policy its
 * annotations may (trusted) or may not (untrusted) drive, and how each way a call can end maps to
 * succeeded, failed_terminal, failed_retryable or uncertain.
 */

let upstream: UpstreamServer;

beforeEach(async () => {
  upstream = await startUpstreamServer();
});
afterEach(async () => {
  await upstream.close();
});

async function toolsOf(spec: McpUpstream): Promise<Map<string, AnyTool>> {
  const listed = await listUpstreamTools(spec, 5_000);
  const out = new Map<string, AnyTool>();
  for (const entry of listed) {
    const tool = upstreamTool(spec, entry);
    if (tool) out.set(tool.name, tool);
  }
  return out;
}

function spec(options = ''): McpUpstream {
  return parseUpstreams(`up=${upstream.url}${options}`)[0] as McpUpstream;
}

describe('an upstream tool as a ledger tool', () => {
  it('is served as <name>.<tool>, validating and normalizing with the upstream JSON Schema', async () => {
    const tools = await toolsOf(spec());
    expect([...tools.keys()].sort()).toEqual(
      ['up.count', 'up.fail', 'up.hang', 'up.peek', 'up.reset', 'up.shift', 'up.upsert', 'up.wipe'].sort(),
    );
    const count = tools.get('up.count') as AnyTool;
    // The upstream's default is filled in, so both spellings have one digest.
    expect(count.schema.parse({ label: 'a' })).toEqual({ label: 'a', times: 1 });
    expect(count.schema.safeParse({ label: 7 }).success).toBe(false);
  });

  it('an untrusted upstream’s annotations drive no policy', async () => {
    const tools = await toolsOf(spec());
    expect(tools.get('up.peek')?.effect).toBe('write');
    expect(tools.get('up.peek')?.annotations?.readOnlyHint).toBeUndefined();
    expect(tools.get('up.wipe')?.requiresApproval).toBe(false);
    expect(tools.get('up.upsert')?.downstreamIdempotent?.({ label: 'a' })).toBe(false);
  });

  it('a trusted upstream’s annotations choose the read path, approval and downstream idempotency', async () => {
    const tools = await toolsOf(spec(';trusted'));
    expect(tools.get('up.peek')?.effect).toBe('read');
    expect(tools.get('up.wipe')?.requiresApproval).toBe(true);
    expect(tools.get('up.upsert')?.downstreamIdempotent?.({ label: 'a' })).toBe(true);
    expect(tools.get('up.count')?.effect).toBe('write');
    expect(tools.get('up.count')?.requiresApproval).toBe(false);
  });

  it('a result succeeds, and the upstream receives the downstream key in _meta', async () => {
    const count = (await toolsOf(spec())).get('up.count') as AnyTool;
    const ctx = toolContext();
    const result = await count.execute({ label: 'a', times: 1 }, ctx);
    expect(result).toMatchObject({ structuredContent: { count: 1 } });
    expect(upstream.keys('count')).toEqual([ctx.downstreamKey]);
  });

  it('a result with isError is a terminal failure', async () => {
    const fail = (await toolsOf(spec())).get('up.fail') as AnyTool;
    await expect(fail.execute({ label: 'a' }, toolContext())).rejects.toBeInstanceOf(TerminalToolError);
    expect(upstream.calls('fail')).toBe(1);
  });

  it('an upstream that cannot be reached is known not applied', async () => {
    const count = (await toolsOf(spec())).get('up.count') as AnyTool;
    await upstream.close();
    const error = await count.execute({ label: 'a', times: 1 }, toolContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotAppliedError);
    expect((error as NotAppliedError).code).toBe('upstream_unreachable');
  });

  it('a connection dropped after the call was sent is uncertain', async () => {
    const reset = (await toolsOf(spec())).get('up.reset') as AnyTool;
    const error = await reset.execute({ label: 'a' }, toolContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UncertainOutcomeError);
    expect(upstream.calls('reset')).toBe(1);
  });

  it('a call whose answer never comes is uncertain when the deadline aborts it', async () => {
    const hang = (await toolsOf(spec())).get('up.hang') as AnyTool;
    const abort = new AbortController();
    const pending = hang
      .execute({ label: 'a' }, toolContext({ signal: abort.signal }))
      .catch((e: unknown) => e);
    await upstream.waitForCall('hang');
    abort.abort(new DOMException('deadline', 'TimeoutError'));
    const error = await pending;
    expect(error).toBeInstanceOf(UncertainOutcomeError);
    expect((error as UncertainOutcomeError).code).toBe('timeout');
  });
});
