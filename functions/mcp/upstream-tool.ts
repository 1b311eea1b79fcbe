import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import {
  type AnyTool,
  NotAppliedError,
  TerminalToolError,
  TOOL_NAME_PATTERN,
  type ToolAnnotations,
  UncertainOutcomeError,
} from '../domain/tool';
import { inSpan, SpanKind, TRACE_ATTRIBUTES, traceCarrier } from '../observability/tracing';
import { jsonSchemaArguments } from './json-schema-arguments';
import { META_OPERATION_ID } from './protocol';
import { closeQuietly, connectUpstream } from './upstream-client';
import type { McpUpstream } from './upstreams';

/**
 * One upstream MCP tool as a ledger tool (`<upstream>.<tool>`), built from the upstream's `tools/list`
 * entry, so that the engine, the executor and the reconciler treat it like any other tool: one
 * reservation, one attempt at a time, the outcome recorded, uncertainty left to the reconciler.
 *
 * Outcomes of one call:
 *
 * | what happened | outcome | code |
 * | --- | --- | --- |
 * | a result | succeeded | — |
 * | a result with `isError` | failed_terminal | `upstream_tool_error` |
 * | the upstream refused the request (unknown tool, invalid params) | failed_terminal | `upstream_refused` |
 * | connect or `initialize` failed, or the call's connection was refused | failed_retryable | `upstream_unreachable` |
 * | anything after sending: timeout, reset, lost or unreadable response, 5xx | uncertain | `timeout`, `upstream_http_<status>`, `upstream_lost_response` |
 *
 * An MCP server cannot be asked whether a call happened, so there is no `reconcile`: an uncertain call
 * goes to an operator, unless the upstream is trusted and the tool says `idempotentHint` (then the
 * next attempt runs with the same downstream key, which the upstream receives as
 * `_meta["io.tool-ledger/operation-id"]`).
 *
 * Annotations drive policy only for a trusted upstream (`readOnlyHint` → the read path,
 * `destructiveHint: true` → approval, `idempotentHint` → downstream-idempotent); an untrusted
 * upstream's tools are plain write tools, and its hints are not passed on to MCP clients either.
 *
 * @example
 * ```ts
 * const tool = upstreamTool(upstream, listed); // listed: one entry of the upstream's tools/list
 * tool?.name; // 'files.write'
 * ```
 */
export function upstreamTool(upstream: McpUpstream, listed: McpTool): AnyTool | undefined {
  const name = `${upstream.name}.${listed.name}`;
  // Ledger names are lowercase and at most 64 characters; an upstream name outside that is not served
  // (renaming it would make two upstream tools collide, or a retry land on another tool).
  if (!TOOL_NAME_PATTERN.test(name)) return undefined;
  const hints = listed.annotations ?? {};
  const trusted = upstream.trusted;
  const readOnly = trusted && hints.readOnlyHint === true;
  const title = listed.title ?? hints.title;
  const annotations: ToolAnnotations = trusted ? { ...hints } : {};
  if (title !== undefined) annotations.title = title;
  const schema = jsonSchemaArguments(listed.inputSchema as Record<string, unknown>);
  return {
    name,
    description: listed.description ?? '',
    schema,
    effect: readOnly ? 'read' : 'write',
    requiresApproval: trusted && !readOnly && hints.destructiveHint === true,
    downstreamIdempotent: () => trusted && hints.idempotentHint === true,
    timeoutMs: upstream.timeoutMs,
    targetClass: 'mcp',
    annotations,
    execute: (args: Record<string, unknown>, ctx) =>
      callUpstream(upstream, listed.name, args, ctx.downstreamKey, ctx.signal),
  };
}

/** What is stored and returned for a successful upstream call: its content, without its `_meta`. */
export interface UpstreamResult {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
}

async function callUpstream(
  upstream: McpUpstream,
  toolName: string,
  args: Record<string, unknown>,
  downstreamKey: string,
  signal: AbortSignal,
): Promise<UpstreamResult> {
  let client: Client;
  try {
    client = await connectUpstream(upstream, signal);
  } catch (error) {
    // Only the handshake was attempted: the call itself was never sent.
    throw new NotAppliedError('upstream_unreachable', 'the upstream MCP server could not be reached', {
      cause: error,
    });
  }
  try {
    // One client span per upstream call; the upstream receives the trace context in `_meta`.
    const result = await inSpan(
      `tools/call ${toolName}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'mcp.method.name': 'tools/call', [TRACE_ATTRIBUTES.toolName]: toolName },
      },
      () =>
        client.callTool(
          {
            name: toolName,
            arguments: args,
            _meta: { ...traceCarrier(), [META_OPERATION_ID]: downstreamKey },
          },
          undefined,
          // The ledger's hard deadline aborts the call; the SDK's own timeout is only a backstop after it.
          { signal, timeout: upstream.timeoutMs + 60_000 },
        ),
    );
    if (result.isError === true) {
      throw new TerminalToolError('upstream_tool_error', 'the upstream tool reported an error');
    }
    const out: UpstreamResult = { content: Array.isArray(result.content) ? result.content : [] };
    const structured = result.structuredContent;
    if (structured !== null && typeof structured === 'object' && !Array.isArray(structured)) {
      out.structuredContent = structured as Record<string, unknown>;
    }
    return out;
  } catch (error) {
    throw classifyCallError(error);
  } finally {
    await closeQuietly(client);
  }
}

/** Refusals an MCP server answers before running anything: the same call would be refused again. */
const REFUSALS = new Set<number>([
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidParams,
  ErrorCode.InvalidRequest,
]);

/** Socket errors that mean no connection was made, so the request cannot have been sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function classifyCallError(error: unknown): Error {
  if (error instanceof TerminalToolError) return error;
  if (error instanceof McpError && REFUSALS.has(error.code)) {
    return new TerminalToolError('upstream_refused', 'the upstream MCP server refused the call');
  }
  if (NOT_CONNECTED.has(socketCode(error) ?? '')) {
    return new NotAppliedError('upstream_unreachable', 'the upstream MCP server could not be reached', {
      cause: error,
    });
  }
  if (error instanceof StreamableHTTPError && error.code !== undefined) {
    return new UncertainOutcomeError(`upstream_http_${error.code}`, 'the upstream answered an HTTP error', {
      status: error.code,
    });
  }
  const timedOut =
    (error instanceof McpError && error.code === ErrorCode.RequestTimeout) ||
    (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'));
  return new UncertainOutcomeError(
    timedOut ? 'timeout' : 'upstream_lost_response',
    'the upstream call was sent but its outcome is unknown',
    { cause: error },
  );
}

/** The `code` of a socket error, wherever fetch put it (`TypeError: fetch failed` with a `cause`). */
function socketCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
