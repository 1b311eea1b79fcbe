import { SETTINGS } from '../contract/environment';

/**
 * The upstream MCP servers a deployment names for the gateway, as one setting that local mode reads
 * from its environment and the CDK construct renders from its prop. Upstream URLs come from the
 * deployment only, never from a caller.
 *
 * Format: comma-separated entries `name=url[;option…]`, options `trusted` (its tool annotations drive
 * policy) and `timeout=<ms>` (the hard deadline of one call, default 10000):
 *
 * ```
 * TOOL_LEDGER_MCP_UPSTREAMS='files=http://127.0.0.1:8931/mcp;trusted,tickets=https://mcp.example.com/mcp;timeout=20000'
 * ```
 */

/**
 * An upstream's name: the first segment of its tools' names (`<name>.<tool>`), so it has no dot, and it
 * leaves room in the 64-character tool name.
 */
export const UPSTREAM_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** Default hard deadline of one upstream call, ms (a tool's default timeout). */
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 10_000;

/** Longest upstream deadline accepted, ms: the executor Lambda's timeout bounds it anyway. */
export const MAX_UPSTREAM_TIMEOUT_MS = 900_000;

/** One upstream MCP server. */
export interface McpUpstream {
  /** Prefix of its tools' names. */
  name: string;
  /** Its Streamable HTTP endpoint. */
  url: string;
  /** Its annotations drive policy (`readOnlyHint`, `destructiveHint`, `idempotentHint`). @default false */
  trusted: boolean;
  /** Hard deadline of one call, ms. @default 10000 */
  timeoutMs: number;
}

/** A malformed upstream setting; the message names the entry by position and what is wrong. */
export class UpstreamSettingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamSettingError';
  }
}

/**
 * Parses the setting. An empty or absent value names no upstream.
 *
 * @example
 * ```ts
 * parseUpstreams('files=http://127.0.0.1:8931/mcp;trusted');
 * // [{ name: 'files', url: 'http://127.0.0.1:8931/mcp', trusted: true, timeoutMs: 10000 }]
 * ```
 */
export function parseUpstreams(spec: string | undefined): McpUpstream[] {
  const upstreams: McpUpstream[] = [];
  const entries = (spec ?? '').split(',').map((entry) => entry.trim());
  entries.forEach((entry, index) => {
    if (entry === '') return;
    const where = `${SETTINGS.mcpUpstreams.name} entry ${index + 1}`;
    const eq = entry.indexOf('=');
    const name = entry.slice(0, eq).trim();
    const [rawUrl = '', ...options] = entry.slice(eq + 1).split(';');
    if (eq <= 0 || !UPSTREAM_NAME_PATTERN.test(name)) {
      throw new UpstreamSettingError(
        `${where}: expected name=url with a name of [a-z][a-z0-9_-]{0,31} (no dots: tools are served as <name>.<tool>)`,
      );
    }
    if (upstreams.some((u) => u.name === name)) {
      throw new UpstreamSettingError(`${where}: the upstream name ${name} is used twice`);
    }
    const url = checkUrl(rawUrl.trim(), where);
    const upstream: McpUpstream = { name, url, trusted: false, timeoutMs: DEFAULT_UPSTREAM_TIMEOUT_MS };
    for (const option of options.map((o) => o.trim())) {
      if (option === 'trusted') upstream.trusted = true;
      else if (/^timeout=\d{1,6}$/.test(option)) {
        upstream.timeoutMs = Number(option.slice('timeout='.length));
        if (upstream.timeoutMs < 100 || upstream.timeoutMs > MAX_UPSTREAM_TIMEOUT_MS) {
          throw new UpstreamSettingError(`${where}: timeout must be 100 to ${MAX_UPSTREAM_TIMEOUT_MS} ms`);
        }
      } else {
        throw new UpstreamSettingError(`${where}: unknown option (options: trusted, timeout=<ms>)`);
      }
    }
    upstreams.push(upstream);
  });
  return upstreams;
}

/**
 * Renders upstreams in the setting's format (what the construct puts in the Lambdas' environment).
 * The result parses back to the same list; an upstream that would not is refused here.
 *
 * @example
 * ```ts
 * formatUpstreams([{ name: 'files', url: 'https://files.example/mcp', trusted: true }]);
 * // 'files=https://files.example/mcp;trusted'
 * ```
 */
export function formatUpstreams(
  upstreams: readonly (Pick<McpUpstream, 'name' | 'url'> & Partial<McpUpstream>)[],
): string {
  const spec = upstreams
    .map((u) => {
      const options = [
        ...(u.trusted ? ['trusted'] : []),
        ...(u.timeoutMs !== undefined && u.timeoutMs !== DEFAULT_UPSTREAM_TIMEOUT_MS
          ? [`timeout=${u.timeoutMs}`]
          : []),
      ];
      if (u.url.includes(',') || u.url.includes(';')) {
        throw new UpstreamSettingError(`the URL of upstream ${u.name} must not contain ',' or ';'`);
      }
      return [`${u.name}=${u.url}`, ...options].join(';');
    })
    .join(',');
  parseUpstreams(spec);
  return spec;
}

function checkUrl(raw: string, where: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UpstreamSettingError(`${where}: the URL is not valid`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UpstreamSettingError(`${where}: the URL must be http:// or https://`);
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in a URL end up in logs and in the Lambda's console; refuse rather than leak them.
    throw new UpstreamSettingError(`${where}: the URL must not carry credentials`);
  }
  if (url.hash !== '') throw new UpstreamSettingError(`${where}: the URL must not have a fragment`);
  return url.toString();
}
