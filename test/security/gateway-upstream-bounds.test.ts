import type { ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { UncertainOutcomeError } from '../../functions/domain/tool';
import { RELIST_AFTER_MS, UpstreamGateway } from '../../functions/mcp/gateway';
import { MAX_UPSTREAM_TOOLS } from '../../functions/mcp/upstream-client';
import type { McpUpstream } from '../../functions/mcp/upstreams';
import { type MisbehavingUpstream, startMisbehavingUpstream, tool } from '../mcp/misbehaving-upstream';
import { ScriptedTool } from '../support/harness';

/**
 * Upstream MCP servers are other people's code: the gateway bounds what it reads from them, validates
 * their schemas in linear time, keeps one upstream's mistakes from costing the others their tools, and
 * never makes a request wait for an upstream's listing after the first. Each upstream here is a real
 * server on the official SDK that misbehaves on purpose (test/mcp/misbehaving-upstream.ts).
 */

const servers: MisbehavingUpstream[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function upstream(name: string, behaviour: Parameters<typeof startMisbehavingUpstream>[0]) {
  const server = await startMisbehavingUpstream(behaviour);
  servers.push(server);
  const config: McpUpstream = { name, url: server.url, trusted: true, timeoutMs: 10_000 };
  return { server, config };
}

const names = async (gateway: UpstreamGateway) =>
  (await gateway.registry())
    .list()
    .map((t) => t.name)
    .sort();

const ctx = (signal = AbortSignal.timeout(60_000)) => ({
  operationId: 'op-1',
  tenant: 'acme',
  downstreamKey: 'k-1',
  attempt: 1,
  signal,
  logger: { info() {}, warn() {}, error() {} },
});

describe('bounded reads', () => {
  it('a tools/list answer of megabytes is refused for its upstream alone; the others are served', async () => {
    const huge = await upstream('huge', {
      list: () => ({
        tools: [tool('big', { type: 'object' }, { description: 'x'.repeat(6 * 1024 * 1024) })],
      }),
    });
    const good = await upstream('good', { list: () => ({ tools: [tool('ok')] }) });
    const gateway = new UpstreamGateway([huge.config, good.config], []);
    expect(await names(gateway)).toEqual(['good.ok']);
    expect(huge.server.listings()).toBe(1);
  });

  it(`at most ${MAX_UPSTREAM_TOOLS} tools of one upstream are served, and no input schema over 64 KiB`, async () => {
    const many = await upstream('many', {
      list: () => ({ tools: Array.from({ length: MAX_UPSTREAM_TOOLS + 100 }, (_, i) => tool(`t${i}`)) }),
    });
    const fat = await upstream('fat', {
      list: () => ({
        tools: [
          tool('wide', {
            type: 'object',
            properties: Object.fromEntries(
              Array.from({ length: 3000 }, (_, i) => [`field_${i}_${'p'.repeat(20)}`, { type: 'string' }]),
            ),
          }),
          tool('slim'),
        ],
      }),
    });
    const served = await names(new UpstreamGateway([many.config, fat.config], []));
    expect(served.filter((n) => n.startsWith('many.'))).toHaveLength(MAX_UPSTREAM_TOOLS);
    expect(served.filter((n) => n.startsWith('fat.'))).toEqual(['fat.slim']);
  });

  it('a tools/call answer of megabytes is not read whole: the attempt is uncertain (the upstream ran it)', async () => {
    const big = await upstream('big', {
      list: () => ({ tools: [tool('dump')] }),
      call: () => ({ content: [{ type: 'text', text: 'y'.repeat(6 * 1024 * 1024) }] }),
    });
    const registry = await new UpstreamGateway([big.config], []).registry();
    await expect(registry.get('big.dump').execute({}, ctx())).rejects.toBeInstanceOf(UncertainOutcomeError);
  });
});

describe('schemas run in linear time', () => {
  it('a backtracking pattern (^([a-z0-9]+)+$) refuses a hostile string at once instead of freezing every request', async () => {
    const evil = await upstream('evil', {
      list: () => ({
        tools: [
          tool('match', {
            type: 'object',
            properties: { s: { type: 'string', pattern: '^([a-z0-9]+)+$' } },
            required: ['s'],
          }),
        ],
      }),
    });
    const schema = (await new UpstreamGateway([evil.config], []).registry()).get('evil.match').schema;
    // With a backtracking engine this takes about 2^40 steps: the event loop never comes back.
    expect(schema.safeParse({ s: `${'a'.repeat(40)}!` }).success).toBe(false);
    expect(schema.safeParse({ s: 'abc123' }).success).toBe(true);
  });

  it('a pattern a linear engine cannot run (a backreference) makes its tool unserved, not the upstream', async () => {
    const odd = await upstream('odd', {
      list: () => ({
        tools: [
          tool('back', { type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } }),
          tool('fine'),
        ],
      }),
    });
    expect(await names(new UpstreamGateway([odd.config], []))).toEqual(['odd.fine']);
  });
});

describe('upstreams are isolated from each other', () => {
  it('one upstream listing a name twice, differently, loses only that name; every other upstream and tool is served', async () => {
    const dup = await upstream('dup', {
      list: () => ({
        tools: [tool('x'), tool('x', { type: 'object', properties: { a: { type: 'string' } } }), tool('y')],
      }),
    });
    const other = await upstream('other', { list: () => ({ tools: [tool('z')] }) });
    expect(await names(new UpstreamGateway([dup.config, other.config], []))).toEqual(['dup.y', 'other.z']);
  });

  it('an upstream tool named like a deployment tool is not served; the deployment tool and the rest are', async () => {
    const clash = await upstream('other', { list: () => ({ tools: [tool('z'), tool('w')] }) });
    const mine = new ScriptedTool('other.z');
    const gateway = new UpstreamGateway([clash.config], [mine.tool]);
    expect(await names(gateway)).toEqual(['other.w', 'other.z']);
    expect((await gateway.registry()).get('other.z')).toBe(mine.tool);
  });

  it('a cursor the upstream already gave ends the paging: its tools are listed once, in two requests', async () => {
    const loop = await upstream('loop', { list: () => ({ tools: [tool('w')], nextCursor: 'again' }) });
    expect(await names(new UpstreamGateway([loop.config], []))).toEqual(['loop.w']);
    expect(loop.server.listings()).toBe(2);
  });
});

describe('listing is not on the request path', () => {
  it('after the first listing, a new listing of a failed upstream runs in the background: the request is answered with the tools listed so far, and the upstream’s tools appear when its slow listing ends', async () => {
    const good = await upstream('good', { list: () => ({ tools: [tool('ok')] }) });
    let release: (tools: ListToolsResult) => void = () => {};
    const slowListing = new Promise<ListToolsResult>((resolve) => {
      release = resolve;
    });
    // Its first listing fails (an error answer); the next one ends only when the test releases it.
    const slow = await upstream('slow', {
      list: (_cursor, n) => (n === 1 ? Promise.reject(new Error('not ready')) : slowListing),
    });
    let now = 1_000_000;
    const gateway = new UpstreamGateway([good.config, slow.config], [], () => now);
    expect(await names(gateway)).toEqual(['good.ok']);
    now += RELIST_AFTER_MS;
    // Answered at once, while the upstream's listing is still open (a request that waited for it
    // would wait until the listing timed out, and the upstream's late answer would be lost).
    expect((await gateway.registry()).list().map((t) => t.name)).toEqual(['good.ok']);
    await slow.server.waitForListing(2);
    release({ tools: [tool('late')] });
    await gateway.settled();
    expect(await names(gateway)).toEqual(['good.ok', 'slow.late']);
  });
});
