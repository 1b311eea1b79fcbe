import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type BackoffPolicy, backoffDelay, DEFAULT_BACKOFF } from './backoff';
import { type Clock, type RandomSource, systemClock } from './clock';
import { assertOperationId, type OperationPosition, operationIdFor } from './operation-id';

/**
 * An MCP client helper for tool-ledger: wraps the official SDK's `Client` (connected to tool-ledger's
 * `/mcp`, to the stdio bridge, or to anything that passes `_meta` on) so that every `tools/call` carries
 * a stable operation ID in `_meta["io.tool-ledger/operation-id"]`, and retries only in ways that are
 * safe: every retry is a new JSON-RPC request (MCP requires a new id) carrying the SAME operation ID, so
 * the ledger replays or reports the first call instead of running it again.
 *
 * Retried (with jittered exponential backoff, up to `maxAttempts` requests): a transport failure or a
 * timeout (the call may or may not have reached the ledger; the same ID makes asking again safe), a
 * result saying the ledger was unavailable, an attempt that did not reach its target
 * (`failed_retryable`), and an operation a worker is still running. Returned as they are: every other
 * result, including `uncertain` and `awaiting_approval`, which a retry cannot settle sooner. Protocol
 * refusals (an unknown method, invalid params) are thrown at once.
 *
 * The `_meta` names are tool-ledger's protocol; they are restated here because this package depends on
 * nothing of the server.
 *
 * @example
 * ```ts
 * const ledger = new ToolLedgerMcpClient(client); // client: an SDK Client connected to <api>/mcp
 * const result = await ledger.callTool({
 *   name: 'workspace.write_file',
 *   arguments: { path: 'notes.txt', content: 'hi' },
 *   position: { agentRunId: 'run-42', step: 3, callIndex: 0 },
 * });
 * result.structuredContent?.state; // 'succeeded'
 * ```
 */
export class ToolLedgerMcpClient {
  private readonly maxAttempts: number;
  private readonly backoff: BackoffPolicy;
  private readonly clock: Clock;
  private readonly random: RandomSource;

  constructor(
    /** The SDK client, already connected. */
    readonly client: Client,
    options: ToolLedgerMcpClientOptions = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? 4;
    if (!Number.isSafeInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new TypeError('maxAttempts must be a positive integer');
    }
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
  }

  /**
   * Calls a tool under one operation ID: `operationId` if given, else `operationIdFor(position)`.
   * The position's agent run is sent as `_meta["io.tool-ledger/agent-run-id"]` when it is a valid one.
   */
  async callTool(call: McpToolCall, options: RequestOptions = {}): Promise<CallToolResult> {
    const operationId = call.operationId ?? (call.position ? operationIdFor(call.position) : undefined);
    assertOperationId(operationId);
    const meta: Record<string, unknown> = { ...call._meta, [MCP_META_OPERATION_ID]: operationId };
    const runId = call.agentRunId ?? call.position?.agentRunId;
    if (runId !== undefined && AGENT_RUN_ID.test(runId)) meta[MCP_META_AGENT_RUN_ID] = runId;
    const params = { name: call.name, arguments: call.arguments ?? {}, _meta: meta };
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= this.maxAttempts;
      let result: CallToolResult;
      try {
        result = (await this.client.callTool(params, undefined, options)) as CallToolResult;
      } catch (error) {
        if (last || !retryableError(error) || options.signal?.aborted) throw error;
        await this.clock.sleep(backoffDelay(this.backoff, attempt - 1, this.random), options.signal);
        continue;
      }
      if (last || !retryableResult(result)) return result;
      await this.clock.sleep(backoffDelay(this.backoff, attempt - 1, this.random), options.signal);
    }
  }
}

/** One tool call through {@link ToolLedgerMcpClient}. */
export interface McpToolCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** Where the action sits in the orchestrator's state; gives the operation ID. */
  position?: OperationPosition;
  /** An operation ID the caller already holds (wins over `position`). */
  operationId?: string;
  /** The agent run, stored with the operation (default: the position's). */
  agentRunId?: string;
  /** More `_meta` to send; the operation ID key is always set by the helper. */
  _meta?: Record<string, unknown>;
}

/** Options of {@link ToolLedgerMcpClient}. */
export interface ToolLedgerMcpClientOptions {
  /** Requests per call, the first included. @default 4 */
  maxAttempts?: number;
  /** @default 100 ms doubling up to 5 s, full jitter */
  backoff?: BackoffPolicy;
  /** @default the system clock */
  clock?: Clock;
  /** @default Math.random */
  random?: RandomSource;
}

/** `_meta` key of the operation ID (tool-ledger's MCP protocol). */
export const MCP_META_OPERATION_ID = 'io.tool-ledger/operation-id';
/** `_meta` key of the agent run ID. */
export const MCP_META_AGENT_RUN_ID = 'io.tool-ledger/agent-run-id';
/** Result `_meta` key: `true` when the ledger replayed a stored outcome. */
export const MCP_META_REPLAYED = 'io.tool-ledger/replayed';

const AGENT_RUN_ID = /^[\x21-\x7e]{1,255}$/;

/** JSON-RPC codes of requests a server refused as such: asking again cannot change the answer. */
const PROTOCOL_REFUSALS = new Set([-32700, -32600, -32601, -32602]);

function retryableError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'number' && PROTOCOL_REFUSALS.has(code)) return false;
  // 4xx answers from the HTTP layer (401, 403, 413, 415) are refusals too; 5xx and network errors are not.
  if (typeof code === 'number' && code >= 400 && code < 500) return false;
  return true;
}

function retryableResult(result: CallToolResult): boolean {
  const body = result.structuredContent as { state?: unknown; code?: unknown } | undefined;
  if (body?.code === 'ledger_unavailable') return true;
  return body?.state === 'failed_retryable' || body?.state === 'pending';
}
