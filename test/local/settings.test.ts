import { describe, expect, it } from 'vitest';
import { LocalSettingsError, loadLocalSettings } from '../../functions/local/settings';
import { resolveConcurrency } from '../../lib/concurrency';

/** Local mode's settings: a value that cannot be used is refused at start, naming the entry. */

/** The tokens local mode makes for a data folder when TOOL_LEDGER_TOKENS is not set. */
const MADE = { spec: 'tl_agent=local:agent+operator,tl_approver=local:approver', file: '/data/tokens' };

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadLocalSettings(env, false, MADE);
  } catch (error) {
    expect(error).toBeInstanceOf(LocalSettingsError);
    return (error as Error).message;
  }
  throw new Error('the settings were accepted');
}

describe('local settings', () => {
  it('names an unknown role and the entry it is in, never the token', () => {
    const message = refusal({ TOOL_LEDGER_TOKENS: 'dev-token=local:agent,s3cret=acme:agnt' });
    expect(message).toBe(
      'TOOL_LEDGER_TOKENS entry 2 (<token>=acme:agnt): unknown role "agnt" (roles: agent, approver, operator)',
    );
    expect(message).not.toContain('s3cret');
  });

  it('names a malformed token entry and an invalid tenant', () => {
    expect(refusal({ TOOL_LEDGER_TOKENS: 'nocolon=acme' })).toContain('entry 1 (<token>=acme): must be');
    expect(refusal({ TOOL_LEDGER_TOKENS: 's3cret' })).toBe(
      'TOOL_LEDGER_TOKENS entry 1 (<token>): must be token=tenant:role+role',
    );
    expect(refusal({ TOOL_LEDGER_TOKENS: 't=ac#me:agent' })).toContain('tenant "ac#me" must match');
    expect(refusal({ TOOL_LEDGER_TOKENS: 't=acme:agent,t=beta:agent' })).toContain('entry 2 repeats a token');
  });

  it('refuses two tenants that differ only by case: a case-insensitive file system would give them one workspace', () => {
    expect(refusal({ TOOL_LEDGER_TOKENS: 'a=Acme:agent,b=beta:agent,c=acme:operator' })).toBe(
      'TOOL_LEDGER_TOKENS entry 3 (<token>=acme:operator): tenant "acme" differs from tenant "Acme" only by case (their workspace folders would be one on a case-insensitive file system); name them apart',
    );
    const same = loadLocalSettings({ TOOL_LEDGER_TOKENS: 'a=Acme:agent,b=Acme:approver' }, false, MADE);
    expect(same.tenants).toEqual(['Acme']);
  });

  it('refuses a webhook origin that names an MCP upstream, naming the entry; a port-less loopback entry is narrowed instead', () => {
    const upstreams = 'files=http://127.0.0.1:8931/mcp;trusted';
    expect(
      refusal({
        TOOL_LEDGER_MCP_UPSTREAMS: upstreams,
        TOOL_LEDGER_WEBHOOK_ALLOW: 'http://127.0.0.1,http://localhost:8931',
      }),
    ).toBe(
      'TOOL_LEDGER_WEBHOOK_ALLOW entry 2 (http://localhost:8931) reaches TOOL_LEDGER_MCP_UPSTREAMS entry "files": ' +
        "tools must never reach the gateway's own upstream MCP servers (webhook.post would call their tools without the ledger); remove the entry",
    );
    // The default list allows any loopback port: the upstream's port is reserved out of it at run time.
    expect(loadLocalSettings({ TOOL_LEDGER_MCP_UPSTREAMS: upstreams }, false, MADE).webhookAllow).toBe(
      'http://127.0.0.1,http://localhost',
    );
  });

  it('names a bad number with its value', () => {
    expect(refusal({ TOOL_LEDGER_RETENTION_SECONDS: '-1' })).toBe(
      'TOOL_LEDGER_RETENTION_SECONDS=-1: must be a non-negative integer',
    );
    expect(refusal({ TOOL_LEDGER_SYNC_WAIT_MS: '1.5' })).toContain('TOOL_LEDGER_SYNC_WAIT_MS=1.5');
    expect(refusal({ TOOL_LEDGER_ATTENTION_SHARDS: '0' })).toBe(
      'TOOL_LEDGER_ATTENTION_SHARDS=0: must be at least 1',
    );
    expect(refusal({ PORT: '70000' })).toContain('PORT=70000: must be a port number');
    expect(refusal({ TOOL_LEDGER_RECONCILE_EVERY_MS: '5' })).toContain('must be at least 10');
  });

  it('names a malformed webhook origin and its entry, for the allow list and the idempotent origins', () => {
    expect(refusal({ TOOL_LEDGER_WEBHOOK_ALLOW: 'http://127.0.0.1,ftp://files.example' })).toBe(
      'TOOL_LEDGER_WEBHOOK_ALLOW entry 2 (ftp://files.example): an allowed origin must use http or https',
    );
    expect(refusal({ TOOL_LEDGER_WEBHOOK_ALLOW: 'not an origin' })).toBe(
      'TOOL_LEDGER_WEBHOOK_ALLOW entry 1 (not an origin): an allowed origin must be [scheme://]host[:port]',
    );
    expect(refusal({ TOOL_LEDGER_WEBHOOK_ALLOW: 'http://127.0.0.1:99999' })).toContain('invalid port');
    expect(refusal({ TOOL_LEDGER_WEBHOOK_IDEMPOTENT: 'https://user@hooks.example' })).toContain(
      'TOOL_LEDGER_WEBHOOK_IDEMPOTENT entry 1 (https://user@hooks.example)',
    );
    const list = 'https://hooks.example, http://127.0.0.1:8080,';
    expect(loadLocalSettings({ TOOL_LEDGER_WEBHOOK_ALLOW: list }, false, MADE).webhookAllow).toBe(list);
  });

  it('names a malformed caller-tools entry, and an entry for a tenant no token names', () => {
    expect(refusal({ TOOL_LEDGER_CALLER_TOOLS: 'crm.*,pay.*:aproval' })).toBe(
      'TOOL_LEDGER_CALLER_TOOLS entry 2 (pay.*:aproval): unknown option "aproval" (options: approval, max_attempts=N)',
    );
    expect(refusal({ TOOL_LEDGER_CALLER_TOOLS: 'acme/crm.*' })).toBe(
      'TOOL_LEDGER_CALLER_TOOLS entry 1: tenant "acme" has no token in TOOL_LEDGER_TOKENS',
    );
    const ok = { TOOL_LEDGER_TOKENS: 't=acme:agent', TOOL_LEDGER_CALLER_TOOLS: 'acme/crm.*:approval' };
    expect(loadLocalSettings(ok, false).tenants).toEqual(['acme']);
  });

  it('reads the log format, pretty on a terminal and json otherwise by default', () => {
    expect(loadLocalSettings({}, true, MADE).logFormat).toBe('pretty');
    expect(loadLocalSettings({}, false, MADE).logFormat).toBe('json');
    expect(loadLocalSettings({ TOOL_LEDGER_LOG_FORMAT: 'json' }, true, MADE).logFormat).toBe('json');
    expect(refusal({ TOOL_LEDGER_LOG_FORMAT: 'JSON' })).toBe(
      'TOOL_LEDGER_LOG_FORMAT=JSON: must be json or pretty',
    );
  });

  it('runs as many executor loops as the construct reserves for the executor, unless told otherwise', () => {
    const construct = resolveConcurrency({}, []);
    expect(loadLocalSettings({}, false, MADE).executorConcurrency).toBe(construct.reserved.executor);
    expect(construct.reserved.executor).toBe(10);
    expect(
      loadLocalSettings({ TOOL_LEDGER_EXECUTOR_CONCURRENCY: '1' }, false, MADE).executorConcurrency,
    ).toBe(1);
    expect(refusal({ TOOL_LEDGER_EXECUTOR_CONCURRENCY: '0' })).toBe(
      'TOOL_LEDGER_EXECUTOR_CONCURRENCY=0: must be from 1 to 100',
    );
    expect(refusal({ TOOL_LEDGER_EXECUTOR_CONCURRENCY: 'ten' })).toBe(
      'TOOL_LEDGER_EXECUTOR_CONCURRENCY=ten: must be a non-negative integer',
    );
  });

  it('accepts the defaults: the tokens made for the data folder, which the banner may print', () => {
    const settings = loadLocalSettings({}, false, MADE);
    expect(settings.tenants).toEqual(['local']);
    expect(settings.tokens.map((t) => t.roles)).toEqual([['agent', 'operator'], ['approver']]);
    expect(settings.tokensFile).toBe('/data/tokens');
    // Tokens someone set are theirs: never printed, whatever the data folder holds.
    expect(loadLocalSettings({ TOOL_LEDGER_TOKENS: 'x=acme:agent' }, false, MADE).tokensFile).toBeUndefined();
  });

  it('has no default token: without TOOL_LEDGER_TOKENS and the data folder’s own, the start is refused', () => {
    expect(() => loadLocalSettings({}, false)).toThrow('TOOL_LEDGER_TOKENS is not set');
  });

  it('names a broken tokens file and how to start over, never its text', () => {
    const refusal = () => loadLocalSettings({}, false, { spec: 's3cret=local:agnt', file: '/data/tokens' });
    expect(refusal).toThrow(
      /^the tokens file \/data\/tokens is not valid \(entry 1 .*\); delete it to make new tokens$/,
    );
    expect(refusal).not.toThrow(/s3cret/);
  });
});
