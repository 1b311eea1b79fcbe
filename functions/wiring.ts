import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { loadConfig } from './config';
import { createDeps, type LedgerDeps } from './engine/ledger-deps';
import { noWorkQueue } from './engine/work-queue';
import { LedgerStore } from './ledger/ledger-store';
import { withUpstreams } from './mcp/gateway';
import { SqsWorkQueue } from './queue/sqs-work-queue';
import { type ToolEnvironment, type ToolFactory, ToolRegistry } from './tools/registry';

/** What a handler process holds for its lifetime: built once per cold start. */
export interface Runtime {
  deps: LedgerDeps;
  /** Tenants the work queue may carry (SPEC §6). */
  queueTenants: ReadonlySet<string>;
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
  });
  const queue = config.queueUrl
    ? new SqsWorkQueue(
        new SQSClient({
          ...localCredentials,
          ...(env.TOOL_LEDGER_SQS_ENDPOINT ? { endpoint: env.TOOL_LEDGER_SQS_ENDPOINT } : {}),
        }),
        config.queueUrl,
      )
    : noWorkQueue;
  const toolEnv: ToolEnvironment = {
    workspaceRoot: env.TOOL_LEDGER_WORKSPACE_DIR ?? '/tmp/workspace',
    webhookAllow: list(env.TOOL_LEDGER_WEBHOOK_ALLOW),
    webhookIdempotentOrigins: list(env.TOOL_LEDGER_WEBHOOK_IDEMPOTENT),
    local,
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
    toolEnv,
    refreshTools: async () => {},
  };
  runtime.refreshTools = withUpstreams(runtime, env);
  return runtime;
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
