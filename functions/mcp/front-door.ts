import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import { AccessError, errorClass, LedgerError, ValidationError } from '../domain/errors';
import { assertOperationId, parseIdempotencyKey } from '../domain/operation-id';
import type { LedgerDeps, RequestContext } from '../engine/ledger-deps';
import { loadedAnswer } from '../engine/payloads';
import { submitOperation } from '../engine/submit-operation';
import type { Identity } from '../http/identity';
import { logger } from '../observability/logger';
import { inOperationSpan, parentFrom } from '../observability/tracing';
import { describeTools } from '../tools/describe';
import type { ToolRegistry } from '../tools/registry';
import { annotationsOf } from './annotations';
import { META_AGENT_RUN_ID, META_OPERATION_ID, SERVER_INFO } from './protocol';
import { refusalResult, toolResultOf } from './tool-result';

/** Who is calling, and with what: one MCP request, as the HTTP route hands it over. */
export interface FrontDoorContext {
  deps: LedgerDeps;
  req: RequestContext;
  identity: Identity;
}

/** Instructions every client receives at `initialize`, for the model's system prompt. */
const INSTRUCTIONS =
  'Every tools/call goes through tool-ledger, which runs each action at most once. Give every intended ' +
  'action its own stable operation ID in _meta["io.tool-ledger/operation-id"] and reuse it on every retry ' +
  'of that action; write tools without one are refused. A result that says the outcome is uncertain, in ' +
  'progress or waiting for approval is not a failure: never retry it with a new operation ID.';

/**
 * The MCP front door for one request: an SDK `Server` whose `tools/list` publishes the deployment's
 * tools (JSON Schemas and annotations) and whose `tools/call` goes through {@link submitOperation},
 * the engine behind `POST /v1/operations`. Stateless: a new server per HTTP request, holding only
 * that request's caller.
 *
 * @example
 * ```ts
 * const server = createFrontDoor({ deps, req, identity });
 * await server.connect(transport);
 * ```
 */
export function createFrontDoor(ctx: FrontDoorContext): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(ctx.deps.tools) }));
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    callTool(ctx, request.params.name, request.params.arguments, request.params._meta),
  );
  return server;
}

const listed = new WeakMap<ToolRegistry, McpTool[]>();

/** The tools as MCP lists them, computed once per registry (a gateway refresh makes a new one). */
export function listTools(tools: ToolRegistry): McpTool[] {
  let list = listed.get(tools);
  if (list) return list;
  const schemas = new Map(describeTools(tools).map((d) => [d.name, d.input_schema]));
  list = tools.list().map((tool) => {
    const annotations = annotationsOf(tool);
    const entry: McpTool = {
      name: tool.name,
      description: tool.description,
      inputSchema: schemas.get(tool.name) as McpTool['inputSchema'],
      annotations,
    };
    if (annotations.title !== undefined) entry.title = annotations.title;
    return entry;
  });
  listed.set(tools, list);
  return list;
}

/**
 * `tools/call`: the same checks and engine as `POST /v1/operations`, with the operation ID from
 * `_meta`. A refusal is a tool result with `isError` and a stable code, never a JSON-RPC error, so the
 * model reads why and what to do.
 */
async function callTool(
  ctx: FrontDoorContext,
  name: string,
  args: Record<string, unknown> | undefined,
  meta: Record<string, unknown> | undefined,
): Promise<CallToolResult> {
  const { deps, req, identity } = ctx;
  try {
    if (!identity.roles.has('agent')) {
      throw new AccessError('forbidden', 'tools/call needs the agent role');
    }
    const tool = deps.tools.get(name);
    const agentRunId = agentRunIdOf(meta);
    const operationId = operationIdOf(meta, tool.effect === 'read');
    // The caller's trace context travels in `params._meta` (`traceparent`, `tracestate`).
    const result = await inOperationSpan('execute_tool', parentFrom(meta), () =>
      submitOperation(deps, req, {
        tenant: identity.tenant,
        principal: identity.principal,
        operationId,
        tool: tool.name,
        arguments: args ?? {},
        mode: 'sync',
        ...(agentRunId === undefined ? {} : { agentRunId }),
      }),
    );
    return toolResultOf(await loadedAnswer(deps, result));
  } catch (error) {
    if (
      !(error instanceof LedgerError) ||
      error.code === 'internal_error' ||
      error.code === 'ledger_unavailable'
    ) {
      logger.error('mcp tools/call failed', {
        code: error instanceof LedgerError ? error.code : 'internal_error',
        error_class: errorClass(error),
        request_id: req.requestId,
      });
    }
    return refusalResult(error, req.requestId);
  }
}

/**
 * The operation ID of a call. Like the `Idempotency-Key` header, `"x"` (an sf-string) and `x` name the
 * same ID; unlike the header, a bare value is one ID even with a comma in it (`_meta` is not a list).
 * A write without one is refused; a read without one runs once under an ID of its own, since repeating
 * a read repeats no effect (nothing is made up from the JSON-RPC id or the arguments).
 */
function operationIdOf(meta: Record<string, unknown> | undefined, isRead: boolean): string {
  const raw = meta?.[META_OPERATION_ID];
  if (raw === undefined || raw === null || raw === '') {
    if (isRead) return `mcp-read:${crypto.randomUUID()}`;
    throw new LedgerError(
      'idempotency_key_missing',
      `a write tool needs an operation ID in params._meta["${META_OPERATION_ID}"]`,
    );
  }
  if (typeof raw !== 'string') {
    throw new LedgerError('idempotency_key_invalid', `params._meta["${META_OPERATION_ID}"] must be a string`);
  }
  if (raw.startsWith('"')) return parseIdempotencyKey([raw]);
  assertOperationId(raw);
  return raw;
}

function agentRunIdOf(meta: Record<string, unknown> | undefined): string | undefined {
  const raw = meta?.[META_AGENT_RUN_ID];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(raw)) {
    throw new ValidationError('the agent run ID is invalid', [
      { path: `params._meta.${META_AGENT_RUN_ID}`, message: 'expected 1 to 255 printable ASCII characters' },
    ]);
  }
  return raw;
}
