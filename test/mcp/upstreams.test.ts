import { describe, expect, it } from 'vitest';
import { LocalSettingsError, loadLocalSettings } from '../../functions/local/settings';
import { formatUpstreams, parseUpstreams, UpstreamSettingError } from '../../functions/mcp/upstreams';

/** `TOOL_LEDGER_MCP_UPSTREAMS`: the gateway's upstreams, as local mode reads them and the construct writes them. */

describe('the upstreams setting', () => {
  it('parses name=url entries with the trusted and timeout options', () => {
    expect(
      parseUpstreams('files=http://127.0.0.1:8931/mcp;trusted, tickets=https://t.example/mcp;timeout=2500'),
    ).toEqual([
      { name: 'files', url: 'http://127.0.0.1:8931/mcp', trusted: true, timeoutMs: 10_000 },
      { name: 'tickets', url: 'https://t.example/mcp', trusted: false, timeoutMs: 2_500 },
    ]);
    expect(parseUpstreams(undefined)).toEqual([]);
    expect(parseUpstreams(' ')).toEqual([]);
  });

  it('round-trips through the format the construct renders', () => {
    const upstreams = parseUpstreams('a=https://a.example/mcp;trusted;timeout=500,b=https://b.example/mcp');
    expect(parseUpstreams(formatUpstreams(upstreams))).toEqual(upstreams);
  });

  it.each([
    ['files', 'entry 1: expected name=url'],
    ['Files=https://f.example/mcp', 'entry 1: expected name=url'],
    ['my.files=https://f.example/mcp', 'no dots'],
    ['a=https://a.example/mcp,a=https://b.example/mcp', 'entry 2: the upstream name a is used twice'],
    ['a=ftp://a.example/mcp', 'http:// or https://'],
    ['a=https://user:secret@a.example/mcp', 'must not carry credentials'],
    ['a=https://a.example/mcp;trust', 'unknown option'],
    ['a=https://a.example/mcp;timeout=5', 'timeout must be 100 to'],
  ])('refuses %s, naming the entry and the rule', (spec, message) => {
    expect(() => parseUpstreams(spec)).toThrow(UpstreamSettingError);
    expect(() => parseUpstreams(spec)).toThrow(message);
  });

  it('never echoes credentials from a refused URL', () => {
    expect(() => parseUpstreams('a=https://user:hunter2@a.example/mcp')).not.toThrow(/hunter2/);
  });

  it('stops local mode at start when an entry is malformed', () => {
    expect(() => loadLocalSettings({ TOOL_LEDGER_MCP_UPSTREAMS: 'files' })).toThrow(LocalSettingsError);
    expect(() => loadLocalSettings({ TOOL_LEDGER_MCP_UPSTREAMS: 'files' })).toThrow(
      /TOOL_LEDGER_MCP_UPSTREAMS entry 1/,
    );
    expect(() =>
      loadLocalSettings({
        TOOL_LEDGER_MCP_UPSTREAMS: 'files=http://127.0.0.1:1/mcp',
        TOOL_LEDGER_TOKENS: 'tl_a=local:agent',
      }),
    ).not.toThrow();
  });
});
