import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
// The MCP gateway, or its stand-in in bundles of deployments without upstreams (functions/mcp/no-upstreams.ts).
import { withUpstreams } from '#tool-ledger/upstreams';
import { loadConfig } from './config';
import { createDeps, type LedgerDeps } from './engine/ledger-deps';
import { QUEUE_SENDERS_VARIABLE, SenderBinding } from './engine/sender-binding';
import { noWorkQueue } from './engine/work-queue';
import { LedgerStore } from './ledger/ledger-store';
import { SqsWorkQueue } from './queue/sqs-work-queue';
import { type ToolEnvironment, type ToolFactory, ToolRegistry } from './tools/registry';

/** Per-request limits of the SDK clients, ms: DynamoDB and SQS answer in milliseconds when well. */
export const SDK_TIMEOUTS = { connectionTimeout: 1_000, requestTimeout: 5_000 } as const;

/**
 * What every SDK client of the handlers is built with: the per-request limits, and the middleware
 * stack resolved once per command class instead of for every request (`cacheMiddleware`). The
 * handlers never add middleware to a client once it has sent, which is the one thing the cache does
 * not see; resolving the stack was a tenth of a local first execution's client time in profiles.
 */
export const SDK_CLIENT_SETTINGS = { requestHandler: SDK_TIMEOUTS, cacheMiddleware: true } as const;

/** What a handler process holds for its lifetime: built once per cold start. */
export interface Runtime {
  deps: LedgerDeps;
  /** Tenants the work queue may carry (SPEC §6). */
  queueTenants: ReadonlySet<string>;
  /**
   * Which queue senders may act for which tenants (SPEC §6), on AWS; undefined in local mode, where
   * the tenant binding alone applies.
   */
  queueSenders: SenderBinding | undefined;
  toolEnv: ToolEnvironment;
  /**
   * Puts the current tools in `deps.tools`: the deployment's, plus the tools of the upstream MCP servers
   * listed so far (`TOOL_LEDGER_MCP_UPSTREAMS`). Handlers await it at the start of every invocation;
   * without upstreams it does nothing.
   */
  refreshTools(): Promise<void>;
}

/**
 * Builds the runtime from the environment. AWS and local mode read the same variables; local mode
 * adds endpoints (`TOOL_LEDGER_DYNAMODB_ENDPOINT`, `TOOL_LEDGER_SQS_ENDPOINT`) and `TOOL_LEDGER_LOCAL`.
 *
 * | variable | meaning |
 * | --- | --- |
 * | `TOOL_LEDGER_WORKSPACE_DIR` | root of the workspace tools (default `/tmp/workspace`) |
 * | `TOOL_LEDGER_WEBHOOK_ALLOW` | comma-separated origins `webhook.post` may call |
 * | `TOOL_LEDGER_WEBHOOK_IDEMPOTENT` | origins that dedupe on `Idempotency-Key` |
 * | `TOOL_LEDGER_QUEUE_TENANTS` | JSON array of tenants the work queue carries |
 * | `TOOL_LEDGER_QUEUE_SENDERS` | JSON senders → tenants (AWS only; unset refuses every message) |
 * | `TOOL_LEDGER_RESERVED_ENDPOINTS` | more endpoints of the deployment itself that tools never reach |
 *
 * The reserved endpoints of the tools are that list plus the ledger's own DynamoDB and SQS endpoints
 * when they are set (local mode) and the Lambda runtime API (`AWS_LAMBDA_RUNTIME_API`) when it is.
 * | `TOOL_LEDGER_MCP_UPSTREAMS` | upstream MCP servers whose tools the gateway serves (functions/mcp/upstreams.ts) |
 */
export function buildRuntime(factory: ToolFactory, env: NodeJS.ProcessEnv = process.env): Runtime {
  const config = loadConfig(env);
  const local = env.TOOL_LEDGER_LOCAL === 'true';
  const localCredentials = local
    ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, region: 'us-east-1' }
    : {};
  const dynamo = new DynamoDBClient({
    ...localCredentials,
    ...(env.TOOL_LEDGER_DYNAMODB_ENDPOINT ? { endpoint: env.TOOL_LEDGER_DYNAMODB_ENDPOINT } : {}),
    maxAttempts: 4,
    // A request that hangs is retried well inside the sync budget (a lost response is recognised by
    // who wrote the record), instead of waiting for the socket's own timeout.
    ...SDK_CLIENT_SETTINGS,
  });
  const queue = config.queueUrl
    ? new SqsWorkQueue(async () => {
        // Loaded at the first send: most invocations never use the queue (sqs-work-queue.ts).
        const { SQSClient } = await import('@aws-sdk/client-sqs');
        return new SQSClient({
          ...localCredentials,
          ...(env.TOOL_LEDGER_SQS_ENDPOINT ? { endpoint: env.TOOL_LEDGER_SQS_ENDPOINT } : {}),
          ...SDK_CLIENT_SETTINGS,
        });
      }, config.queueUrl)
    : noWorkQueue;
  const toolEnv: ToolEnvironment = {
    workspaceRoot: env.TOOL_LEDGER_WORKSPACE_DIR ?? '/tmp/workspace',
    webhookAllow: list(env.TOOL_LEDGER_WEBHOOK_ALLOW),
    webhookIdempotentOrigins: list(env.TOOL_LEDGER_WEBHOOK_IDEMPOTENT),
    local,
    reservedEndpoints: reservedEndpoints(env),
    retentionSeconds: config.retentionSeconds,
  };
  const deps = createDeps({
    store: new LedgerStore({ client: dynamo, tableName: config.tableName }),
    tools: new ToolRegistry(factory(toolEnv)),
    config,
    queue,
  });
  const runtime: Runtime = {
    deps,
    queueTenants: new Set(parseTenants(env.TOOL_LEDGER_QUEUE_TENANTS)),
    queueSenders: local ? undefined : SenderBinding.parse(env[QUEUE_SENDERS_VARIABLE]),
    toolEnv,
    refreshTools: async () => {},
  };
  runtime.refreshTools = withUpstreams(runtime, env);
  return runtime;
}

/** The deployment's own service endpoints, which no tool may reach (see {@link buildRuntime}). */
function reservedEndpoints(env: NodeJS.ProcessEnv): string[] {
  return [
    ...list(env.TOOL_LEDGER_RESERVED_ENDPOINTS),
    env.TOOL_LEDGER_DYNAMODB_ENDPOINT,
    env.TOOL_LEDGER_SQS_ENDPOINT,
    env.AWS_LAMBDA_RUNTIME_API,
  ].filter((entry): entry is string => entry !== undefined && entry.trim() !== '');
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function parseTenants(raw: string | undefined): string[] {
  if (!raw) return [];
  const value = JSON.parse(raw) as unknown;
  if (!Array.isArray(value) || !value.every((t) => typeof t === 'string')) {
    throw new Error('TOOL_LEDGER_QUEUE_TENANTS must be a JSON array of tenant names');
  }
  return value;
}
