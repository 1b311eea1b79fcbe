import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { withUpstreams } from '../../functions/mcp/no-upstreams';
import { ToolRegistry } from '../../functions/tools/registry';
import { DEFAULT_TOOLS_MODULE, esbuildOptions, HANDLER_ENTRIES } from '../../lib/bundling';

/*
 * A deployment without MCP upstreams bundles a stand-in for the gateway, so that the MCP SDK's client
 * and Ajv stay out of its handlers (and their cold start); one with upstreams bundles the gateway.
 */

async function executorBundle(upstreams: boolean): Promise<string> {
  const result = await build({
    ...esbuildOptions(
      HANDLER_ENTRIES.executor,
      { toolsModule: DEFAULT_TOOLS_MODULE, bundleAwsSdk: false, upstreams },
      path.join(tmpdir(), 'tool-ledger-upstreams'),
    ),
    minify: false,
    write: false,
    logLevel: 'silent',
  });
  // The entry and its chunks: the gateway may sit in either.
  return result.outputFiles.map((file) => file.text).join('\n');
}

describe('the MCP gateway in the handler bundles', () => {
  it('is left out of a deployment without upstreams and bundled into one with them', async () => {
    const without = await executorBundle(false);
    const withGateway = await executorBundle(true);
    // The MCP SDK's client transport and Ajv's validator class, by names that minification keeps out.
    expect(without).not.toContain('StreamableHTTPClientTransport');
    expect(without).not.toContain('class Ajv');
    expect(withGateway).toContain('StreamableHTTPClientTransport');
    expect(withGateway.length).toBeGreaterThan(without.length * 1.5);
  }, 60_000);

  it('is chosen by the construct’s bundling options', () => {
    const alias = (upstreams: boolean) =>
      esbuildOptions(
        HANDLER_ENTRIES.executor,
        { toolsModule: DEFAULT_TOOLS_MODULE, bundleAwsSdk: false, upstreams },
        '.',
      ).alias?.['#tool-ledger/upstreams'];
    expect(alias(false)).toMatch(/no-upstreams\.ts$/);
    expect(alias(true)).toMatch(/gateway\.ts$/);
  });

  it('stand-in: does nothing without upstreams and refuses to start when the environment names some', () => {
    const deps = { tools: new ToolRegistry([]) };
    expect(() => withUpstreams(deps, {})).not.toThrow();
    expect(() =>
      withUpstreams(deps, { TOOL_LEDGER_MCP_UPSTREAMS: 'files=https://mcp.example.com/mcp' }),
    ).toThrow(/bundled without the MCP gateway: set mcpUpstreams on the construct/);
  });
});
