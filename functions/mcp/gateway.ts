import { readSetting, SETTINGS } from '../contract/environment';
import { errorClass } from '../domain/errors';
import type { AnyTool } from '../domain/tool';
import type { LedgerDeps } from '../engine/ledger-deps';
import { logger } from '../observability/logger';
import { ToolRegistry } from '../tools/registry';
import { type McpUpstream, parseUpstreams } from './upstreams';

/** How long listing one upstream may take at a cold start or a refresh, ms. */
export const LIST_TIMEOUT_MS = 5_000;

/** How long after a failed listing an upstream is asked again, ms. */
export const RELIST_AFTER_MS = 30_000;

/**
 * The gateway's view of its upstreams: their tools, listed once per process (a Lambda cold start, or
 * local mode's first request), merged into the deployment's registry. An upstream that cannot be
 * listed is logged by name and asked again on a later invocation, at most every
 * {@link RELIST_AFTER_MS}; until then its tools are unknown, which refuses calls (`tool_unknown`, no
 * record) and leaves queued operations waiting for the reconciler's next enqueue rather than lost.
 * Listings are never refreshed once they succeeded: a tool's schema is part of its digest's
 * normalization, so it changes with a deployment, not under a running one.
 *
 * Only the first listing is waited for (a cold start, which has nothing to serve without it); a later
 * one, of an upstream whose listing failed, runs in the background and its tools appear once it ends,
 * so no request (an unauthenticated one least of all) waits for a hanging upstream. Upstreams are
 * isolated from each other and from the deployment's tools: a tool name an upstream lists twice, or
 * one that is already a deployment's tool, is not served (logged with the upstream's name), and every
 * other tool still is.
 *
 * @example
 * ```ts
 * const gateway = new UpstreamGateway(parseUpstreams(readSetting(env, SETTINGS.mcpUpstreams)), baseTools);
 * deps.tools = await gateway.registry();
 * ```
 */
export class UpstreamGateway {
  private readonly listed = new Map<string, AnyTool[]>();
  private readonly failedAt = new Map<string, number>();
  private current: ToolRegistry;
  private pending: Promise<ToolRegistry> | undefined;
  private firstListed = false;

  constructor(
    readonly upstreams: readonly McpUpstream[],
    private readonly base: readonly AnyTool[],
    private readonly clock: () => number = Date.now,
  ) {
    this.current = new ToolRegistry(base);
  }

  /** The registry with every upstream listed so far; lists those that are due first. */
  async registry(): Promise<ToolRegistry> {
    const now = this.clock();
    const due = this.upstreams.filter(
      (u) => !this.listed.has(u.name) && now - (this.failedAt.get(u.name) ?? -Infinity) >= RELIST_AFTER_MS,
    );
    if (due.length === 0) return this.current;
    // Concurrent invocations (local mode) share one listing.
    this.pending ??= this.list(due).finally(() => {
      this.pending = undefined;
      this.firstListed = true;
    });
    // After the first listing, a new one never holds up a request: it serves what is listed now.
    return this.firstListed ? this.current : this.pending;
  }

  /** Resolves once no listing is running (for tests and a clean stop). */
  async settled(): Promise<void> {
    await this.pending?.catch(() => undefined);
  }

  private async list(due: readonly McpUpstream[]): Promise<ToolRegistry> {
    // The MCP SDK's client and Ajv are loaded with the first listing: a deployment without upstreams,
    // and every handler's cold start, never pays for them.
    const [{ listUpstreamTools, MAX_UPSTREAM_TOOLS }, { upstreamTool }] = await Promise.all([
      import('./upstream-client'),
      import('./upstream-tool'),
    ]);
    await Promise.all(
      due.map(async (upstream) => {
        try {
          const tools = await listUpstreamTools(upstream, LIST_TIMEOUT_MS);
          if (tools.length > MAX_UPSTREAM_TOOLS) {
            logger.warn('upstream tools not served', { upstream: upstream.name, code: 'too_many_tools' });
          }
          // A name listed twice with different definitions is ambiguous (which schema, which hints?):
          // neither is served. The same entry listed again (a page repeated) is served once.
          const byName = new Map<string, string>();
          const ambiguous = new Set<string>();
          for (const listed of tools) {
            const seen = byName.get(listed.name);
            const definition = JSON.stringify(listed);
            if (seen === undefined) byName.set(listed.name, definition);
            else if (seen !== definition) ambiguous.add(listed.name);
          }
          const served: AnyTool[] = [];
          const taken = new Set<string>();
          for (const listed of tools.slice(0, MAX_UPSTREAM_TOOLS)) {
            if (ambiguous.has(listed.name)) {
              logger.warn('upstream tool not served', {
                upstream: upstream.name,
                code: 'tool_name_repeated',
              });
              continue;
            }
            if (taken.has(listed.name)) continue;
            taken.add(listed.name);
            try {
              const tool = upstreamTool(upstream, listed);
              if (tool) served.push(tool);
              else
                logger.warn('upstream tool not served', {
                  upstream: upstream.name,
                  code: 'tool_name_invalid',
                });
            } catch (error) {
              logger.warn('upstream tool not served', {
                upstream: upstream.name,
                code: 'input_schema_unusable',
                error_class: errorClass(error),
              });
            }
          }
          this.listed.set(upstream.name, served);
          this.failedAt.delete(upstream.name);
          logger.info('upstream listed', { upstream: upstream.name, tools: served.length });
        } catch (error) {
          this.failedAt.set(upstream.name, this.clock());
          logger.error('upstream listing failed', {
            upstream: upstream.name,
            code: 'mcp_upstream_unavailable',
            error_class: errorClass(error),
          });
        }
      }),
    );
    const tools = [...this.base];
    const names = new Set(tools.map((tool) => tool.name));
    for (const upstream of this.upstreams) {
      for (const tool of this.listed.get(upstream.name) ?? []) {
        // A deployment tool already named `<upstream>.<tool>` wins; only the upstream's tool is dropped.
        if (names.has(tool.name)) {
          logger.warn('upstream tool not served', { upstream: upstream.name, code: 'tool_name_taken' });
          continue;
        }
        names.add(tool.name);
        tools.push(tool);
      }
    }
    try {
      this.current = new ToolRegistry(tools);
    } catch (error) {
      // Not expected (names are unique above); keep serving what was served before.
      logger.error('upstream tools not registered', { error_class: errorClass(error) });
    }
    return this.current;
  }
}

/**
 * Adds the gateway to an engine's deps when the deployment names upstreams (`SETTINGS.mcpUpstreams`):
 * returns a function each handler awaits at the start of an invocation, which puts the current
 * registry (deployment tools plus upstream tools) in the deps. Without upstreams it does
 * nothing.
 *
 * @example
 * ```ts
 * const runtime = buildRuntime(tools);
 * const refresh = withUpstreams(runtime.deps);
 * await refresh(); // before handling an event
 * ```
 */
export function withUpstreams(
  deps: Pick<LedgerDeps, 'tools'>,
  env: NodeJS.ProcessEnv = process.env,
): () => Promise<void> {
  const upstreams = parseUpstreams(readSetting(env, SETTINGS.mcpUpstreams));
  if (upstreams.length === 0) return async () => {};
  const gateway = new UpstreamGateway(upstreams, deps.tools.list());
  return async () => {
    deps.tools = await gateway.registry();
  };
}
