import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseUpstreams } from '../../functions/mcp/upstreams';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import type { ToolLedgerProps } from '../../lib/tool-ledger';
import { exampleStack, testApp } from '../cdk/synth';

/** The construct's side of MCP: the `/mcp` route behind IAM, and the gateway's upstreams prop. */

function problemsOf(props: ToolLedgerProps): string[] {
  try {
    resolveSettings(props);
    return [];
  } catch (error) {
    if (error instanceof ToolLedgerConfigError) return [...error.problems];
    throw error;
  }
}

let template: Template;

beforeAll(() => {
  template = Template.fromStack(
    exampleStack(testApp(), {
      ledger: {
        mcpUpstreams: [
          { name: 'files', url: 'https://files.example.com/mcp', trusted: true },
          { name: 'tickets', url: 'https://tickets.example.com/mcp', timeout: Duration.seconds(20) },
        ],
      },
    }),
  );
});

describe('MCP in the CDK construct', () => {
  it('serves POST /mcp behind IAM, and lets the agent role invoke it', () => {
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'mcp' });
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      AuthorizationType: 'AWS_IAM',
      ResourceId: { Ref: Match.stringLikeRegexp('mcp') },
    });
    const policies = template.findResources('AWS::IAM::ManagedPolicy', {
      Properties: { Description: Match.stringLikeRegexp('agent') },
    });
    expect(JSON.stringify(policies)).toContain('/POST/mcp');
  });

  it('hands every handler the upstreams in the format local mode reads', () => {
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: { Environment: { Variables: { TOOL_LEDGER_MCP_UPSTREAMS: Match.anyValue() } } },
    });
    const values = Object.values(functions).map(
      (fn) =>
        (fn as { Properties: { Environment: { Variables: Record<string, string> } } }).Properties.Environment
          .Variables.TOOL_LEDGER_MCP_UPSTREAMS,
    );
    expect(values.length).toBeGreaterThanOrEqual(3);
    for (const value of values) {
      expect(parseUpstreams(value)).toEqual([
        { name: 'files', url: 'https://files.example.com/mcp', trusted: true, timeoutMs: 10_000 },
        { name: 'tickets', url: 'https://tickets.example.com/mcp', trusted: false, timeoutMs: 20_000 },
      ]);
    }
  });

  it('refuses a webhookAllow entry that reaches an upstream, naming both props', () => {
    const upstream = { name: 'files', url: 'https://files.example.com/mcp' };
    expect(
      problemsOf({
        webhookAllow: ['https://hooks.example.com', 'https://files.example.com'],
        mcpUpstreams: [upstream],
      }),
    ).toEqual([
      'webhookAllow entry 2 (https://files.example.com) reaches mcpUpstreams "files": tools must never reach the ' +
        "gateway's own upstream MCP servers (webhook.post would call their tools without the ledger); remove the entry.",
    ]);
    expect(problemsOf({ webhookAllow: ['files.example.com:443'], mcpUpstreams: [upstream] })[0]).toMatch(
      /^webhookAllow entry 1 \(files\.example\.com:443\) reaches mcpUpstreams "files"/,
    );
    // Another port of the same host is another endpoint.
    expect(
      problemsOf({ webhookAllow: ['https://files.example.com:8443'], mcpUpstreams: [upstream] }),
    ).toEqual([]);
  });

  it('refuses upstreams that are not https, badly named, or set through environment', () => {
    expect(problemsOf({ mcpUpstreams: [{ name: 'files', url: 'http://files.example.com/mcp' }] })).toEqual([
      'mcpUpstreams "files" must use an https:// URL.',
    ]);
    expect(
      problemsOf({ mcpUpstreams: [{ name: 'my.files', url: 'https://files.example.com/mcp' }] })[0],
    ).toMatch(/no dots/);
    expect(() =>
      exampleStack(testApp(), {
        ledger: { environment: { TOOL_LEDGER_MCP_UPSTREAMS: 'x=https://x.example' } },
      }),
    ).toThrow(/TOOL_LEDGER_MCP_UPSTREAMS/);
  });
});
