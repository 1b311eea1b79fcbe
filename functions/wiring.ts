import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
// The MCP gateway, or its stand-in in bundles of deployments without upstreams (functions/mcp/no-upstreams.ts).
import { withUpstreams } from '#tool-ledger/upstreams';
import { loadConfig } from './config';
import { readSetting, SETTINGS } from './contract/environment';
import { createDeps, type LedgerDeps } from './engine/ledger-deps';
import type { ObjectStore } from './engine/object-store';
import { parseTenantRateLimits, type TenantRateLimiter } from './engine/tenant-rate-limit';
import { noWorkQueue } from './engine/work-queue';
import { lazySink } from './events/lazy-sink';
import { LedgerStore } from './ledger/ledger-store';
import { DynamoTenantLimiter } from './ledger/tenant-limiter';
import { inProcessDynamo } from './local/in-process-dynamo';
import { parseUpstreams } from './mcp/upstreams';
import { SenderBinding } from './queue/sender-binding';
import { SqsWorkQueue } from './queue/sqs-work-queue';
import { parseAllowedOrigin } from './tools/origin-policy';
import { type ToolEnvironment, type ToolFactory, ToolRegistry } from './tools/registry';
import { parseToolSecrets, secretReader } from './tools/tool-secrets';

/** Per-request limits of the SDK clients, ms: DynamoDB and SQS answer in milliseconds when well. */
export const SDK_TIMEOUTS = { connectionTimeout: 1_000, requestTimeout: 5_000 } as const;

/**
 * What every SDK client of the handlers is built with: the per-request limits, and the middleware
 * stack resolved once per command class instead of for every request (`cacheMiddleware`). The
 * handlers never add middleware to a client once it has sent, which is the one thing the cache does
 * not see; resolving the stack was a tenth of a local first execution's client time in profiles.
 */
export const SDK_CLIENT_SETTINGS = { requestHandler: SDK_TIMEOUTS, cacheMiddleware: true } as const;

/**
 * How local mode's handlers sign requests to its own dynalite, on 127.0.0.1 in the same process:
 * dynalite checks that a request carries a well-formed SigV4 `Authorization` header and a date, never its
 * signature (it has no keys to check it with). Computing a real signature there (a SHA-256 of the body,
 * four HMACs, the canonical request) was a tenth of local mode's handler time under load and proved
 * nothing, so both are fixed, well-formed values. Only with the `local` flag and a DynamoDB
 * endpoint on this machine's loopback ({@link isLoopback}); everywhere else (AWS, or a `local` flag set by mistake against a
 * remote endpoint, which then fails closed) the SDK signs every request as usual.
 */
const LOCAL_SIGNER = {
  sign: async <R extends { headers: Record<string, string> }>(request: R): Promise<R> => {
    request.headers['x-amz-date'] = '20260101T000000Z';
    request.headers.authorization =
      'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0';
    return request;
  },
};

/**
 * Local mode's own DynamoDB thread, when this process started it for `endpoint`: its clients send
 * their requests over a MessagePort instead of the loopback socket (functions/local/in-process-dynamo.ts).
 * Only with the local flag; anywhere else the SDK's HTTP handler is used.
 */
function localRequestHandler(local: boolean, endpoint: string | undefined) {
  const requestHandler = local ? inProcessDynamo(endpoint) : undefined;
  return requestHandler ? { requestHandler } : {};
}

/**
 * True for an endpoint on this machine's loopback (`localhost`, 127.0.0.0/8, `[::1]`), as the tools'
 * origin policy reads hosts; anything it cannot parse is not.
 */
export function isLoopback(endpoint: string | undefined): boolean {
  if (endpoint === undefined) return false;
  try {
    return parseAllowedOrigin(endpoint).loopback;
  } catch {
    return false;
  }
}

/** What a handler process holds for its lifetime: built once per cold start. */
export interface Runtime {
  deps: LedgerDeps;
  /** Tenants the work queue may carry (the contract, §6). */
  queueTenants: ReadonlySet<string>;
  /**
   * Which queue senders may act for which tenants (the contract, §6), on AWS; undefined in local mode, where
   * the tenant binding alone applies.
   */
  queueSenders: SenderBinding | undefined;
  toolEnv: ToolEnvironment;
  /** Per-tenant request limits of the HTTP front door, when the deployment sets them. */
  tenantLimiter?: TenantRateLimiter;
  /**
   * Puts the current tools in `deps.tools`: the deployment's, plus the tools of the upstream MCP servers
   * listed so far (`mcpUpstreams`). Handlers await it at the start of every invocation;
   * without upstreams it does nothing.
   */
  refreshTools(): Promise<void>;
}

/**
 * Builds the runtime from the environment. AWS and local mode read the same variables (their names,
 * kinds and defaults are in functions/contract/environment.ts); local mode adds the endpoints of its
 * DynamoDB and SQS and the `local` flag.
 *
 * The reserved endpoints of the tools are `reservedEndpoints` plus the ledger's own DynamoDB and SQS
 * endpoints when they are set (local mode), the Lambda runtime API (`AWS_LAMBDA_RUNTIME_API`) when
 * it is, and the gateway's upstream MCP servers (`mcpUpstreams`), locally and on AWS.
 */
export function buildRuntime(factory: ToolFactory, env: NodeJS.ProcessEnv = process.env): Runtime {
  const config = loadConfig(env);
  const local = readSetting(env, SETTINGS.local);
  const dynamoEndpoint = readSetting(env, SETTINGS.dynamoEndpoint);
  const sqsEndpoint = readSetting(env, SETTINGS.sqsEndpoint);
  const localCredentials = local
    ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, region: 'us-east-1' }
    : {};
  const dynamo = new DynamoDBClient({
    ...localCredentials,
    ...(local && isLoopback(dynamoEndpoint) ? { signer: LOCAL_SIGNER } : {}),
    ...(dynamoEndpoint ? { endpoint: dynamoEndpoint } : {}),
    maxAttempts: 4,
    // A request that hangs is retried well inside the sync budget (a lost response is recognised by
    // who wrote the record), instead of waiting for the socket's own timeout.
    ...SDK_CLIENT_SETTINGS,
    // After the settings: local mode's own thread replaces the HTTP handler and its timeouts.
    ...localRequestHandler(local, dynamoEndpoint),
  });
  const queue = config.queueUrl
    ? new SqsWorkQueue(async () => {
        // Loaded at the first send: most invocations never use the queue (sqs-work-queue.ts).
        const { SQSClient } = await import('@aws-sdk/client-sqs');
        return new SQSClient({
          ...localCredentials,
          ...(sqsEndpoint ? { endpoint: sqsEndpoint } : {}),
          ...SDK_CLIENT_SETTINGS,
        });
      }, config.queueUrl)
    : noWorkQueue;
  const toolEnv = toolEnvironment(env);
  // Local mode sends completion events from the engine; on AWS the events function reads the stream.
  const eventsQueueUrl = readSetting(env, SETTINGS.eventsQueueUrl);
  const events =
    eventsQueueUrl === ''
      ? undefined
      : lazySink(async () => {
          const [{ SQSClient }, { SqsEventSink }] = await Promise.all([
            import('@aws-sdk/client-sqs'),
            import('./events/sqs-event-sink'),
          ]);
          const client = new SQSClient({
            ...localCredentials,
            ...(sqsEndpoint ? { endpoint: sqsEndpoint } : {}),
            ...SDK_CLIENT_SETTINGS,
          });
          return new SqsEventSink(client, eventsQueueUrl);
        });
  const objects = resultObjects(env, localCredentials);
  const deps = createDeps({
    store: new LedgerStore({ client: dynamo, tableName: config.tableName }),
    ...(objects === undefined ? {} : { objects }),
    tools: new ToolRegistry(factory(toolEnv)),
    config,
    queue,
    ...(events === undefined ? {} : { events }),
  });
  const runtime: Runtime = {
    deps,
    queueTenants: new Set(parseTenants(readSetting(env, SETTINGS.queueTenants))),
    queueSenders: local ? undefined : SenderBinding.parse(readSetting(env, SETTINGS.queueSenders)),
    toolEnv,
    refreshTools: async () => {},
  };
  const limits = parseTenantRateLimits(
    readSetting(env, SETTINGS.tenantRateLimits),
    SETTINGS.tenantRateLimits.name,
  );
  if (limits !== undefined) runtime.tenantLimiter = new DynamoTenantLimiter(dynamo, config.tableName, limits);
  runtime.refreshTools = withUpstreams(deps, env);
  return runtime;
}

/**
 * The object store of whole results, when the deployment names a bucket: S3 on AWS, local mode's
 * emulator at its endpoint (path-style, since bucket host names do not resolve locally). The SDK is
 * loaded at the first put or get: most invocations never touch a large result.
 */
function resultObjects(env: NodeJS.ProcessEnv, localCredentials: object): ObjectStore | undefined {
  const bucket = readSetting(env, SETTINGS.resultsBucket);
  if (bucket === '') return undefined;
  const endpoint = readSetting(env, SETTINGS.s3Endpoint);
  let store: Promise<ObjectStore> | undefined;
  const open = (): Promise<ObjectStore> => {
    store ??= Promise.all([import('@aws-sdk/client-s3'), import('./ledger/s3-object-store')]).then(
      ([{ S3Client }, { S3ObjectStore }]) =>
        new S3ObjectStore(
          new S3Client({
            ...localCredentials,
            ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
            maxAttempts: 3,
            // Up to 6 MB each way: more time per request than DynamoDB's, still well inside a sync call.
            requestHandler: { connectionTimeout: SDK_TIMEOUTS.connectionTimeout, requestTimeout: 10_000 },
            cacheMiddleware: true,
          }),
          bucket,
        ),
    );
    return store;
  };
  return {
    put: async (key, bytes, encoding) => (await open()).put(key, bytes, encoding),
    get: async (key) => (await open()).get(key),
    delete: async (key) => (await open()).delete(key),
  };
}

/**
 * What the deployment's tool factory is given, read from the environment: the same for every handler and
 * for local mode's start-up check of the tools (functions/local/start-tools.ts).
 *
 * @example
 * ```ts
 * const registry = new ToolRegistry(tools(toolEnvironment(process.env)));
 * ```
 */
export function toolEnvironment(env: NodeJS.ProcessEnv = process.env): ToolEnvironment {
  return {
    workspaceRoot: readSetting(env, SETTINGS.workspaceDir),
    webhookAllow: readSetting(env, SETTINGS.webhookAllow),
    webhookIdempotentOrigins: readSetting(env, SETTINGS.webhookIdempotent),
    local: readSetting(env, SETTINGS.local),
    reservedEndpoints: reservedEndpoints(env),
    retentionSeconds: readSetting(env, SETTINGS.retentionSeconds),
    secret: secretReader(
      parseToolSecrets(readSetting(env, SETTINGS.toolSecrets), SETTINGS.toolSecrets.name),
      readSetting(env, SETTINGS.local),
      env,
    ),
  };
}

/**
 * The deployment's own service endpoints, which no tool may reach (see {@link buildRuntime}). The
 * gateway's upstreams are among them: a tool that reached one could post a JSON-RPC `tools/call`
 * straight to it, and run a tool the gateway holds for approval with no approval and no record.
 */
function reservedEndpoints(env: NodeJS.ProcessEnv): string[] {
  return [
    ...readSetting(env, SETTINGS.reservedEndpoints),
    readSetting(env, SETTINGS.dynamoEndpoint),
    readSetting(env, SETTINGS.sqsEndpoint),
    readSetting(env, SETTINGS.s3Endpoint),
    env.AWS_LAMBDA_RUNTIME_API,
    ...parseUpstreams(readSetting(env, SETTINGS.mcpUpstreams)).map((upstream) => upstream.url),
  ].filter((entry): entry is string => entry !== undefined && entry.trim() !== '');
}

function parseTenants(raw: string | undefined): string[] {
  if (!raw) return [];
  const value = JSON.parse(raw) as unknown;
  if (!Array.isArray(value) || !value.every((t) => typeof t === 'string')) {
    throw new Error(`${SETTINGS.queueTenants.name} must be a JSON array of tenant names`);
  }
  return value;
}
