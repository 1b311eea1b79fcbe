/**
 * Every environment variable of tool-ledger, stated once: its name, what kind of value it holds, its
 * default, and who reads it. The construct (lib/environment.ts) writes the handlers' variables by these
 * names; the handlers read them through {@link readSetting} (functions/config.ts, functions/wiring.ts,
 * the authenticators); local mode checks them at start and sets them for the handlers it runs
 * (functions/local/); the CLI reads its own two. A variable is never spelled anywhere else. Pure data
 * and parsing: no SDK, no CDK.
 */

/**
 * Who reads a variable: one of the three Lambda handlers, local mode's launcher (which also sets the
 * handlers' variables; the contract, §10), or the CLI and console.
 */
export type SettingReader = 'api' | 'executor' | 'reconciler' | 'events' | 'local' | 'cli';

/** What a variable holds, which decides how {@link readSetting} parses it. */
export type SettingKind =
  /** A non-negative integer; an empty or absent variable takes the default. */
  | 'integer'
  /** `true` turns it on; anything else is off. */
  | 'flag'
  /** Text as given; absent takes the default. */
  | 'string'
  /** Comma-separated entries, each trimmed, empty ones dropped. */
  | 'list';

/** One variable. */
export interface Setting {
  /** The variable's name, exactly as the environment holds it. */
  readonly name: string;
  readonly kind: SettingKind;
  /** The value when the variable is absent (undefined: none, the reader decides). */
  readonly default?: number | string | boolean | undefined;
  /** Least value an `integer` may take; local mode refuses less at start (default 0). */
  readonly min?: number;
  /** Who reads it. */
  readonly readers: readonly SettingReader[];
}

/** A variable that cannot be used: names the variable, never a secret value it may hold. */
export class SettingError extends Error {
  /** The variable at fault. */
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(message);
    this.name = 'SettingError';
    this.variable = variable;
  }
}

const HANDLERS: readonly SettingReader[] = ['api', 'executor', 'reconciler'];
const HANDLERS_AND_LOCAL: readonly SettingReader[] = [...HANDLERS, 'local'];

/** Origins `webhook.post` may call in local mode when `TOOL_LEDGER_WEBHOOK_ALLOW` is not set. */
export const LOCAL_WEBHOOK_ALLOW = 'http://127.0.0.1,http://localhost';

/**
 * Executors that run at once by default: the construct's `executorMaxConcurrency` (and the reserved
 * concurrency it gives the executor), and the executor loops of local mode
 * (`TOOL_LEDGER_EXECUTOR_CONCURRENCY`).
 */
export const DEFAULT_EXECUTOR_CONCURRENCY = 10;

/**
 * The variables, by what they configure. Handlers, local mode and the construct refer to an entry
 * (`SETTINGS.retentionSeconds.name`), never to the text of a name.
 */
export const SETTINGS = {
  // The engine (functions/config.ts): set by the construct from its props, by local mode, or by the user.
  /** DynamoDB table name. */
  tableName: {
    name: 'TOOL_LEDGER_TABLE_NAME',
    kind: 'string',
    default: 'tool-ledger',
    readers: HANDLERS_AND_LOCAL,
  },
  /** Work queue URL (empty where no queue is wired). */
  queueUrl: { name: 'TOOL_LEDGER_QUEUE_URL', kind: 'string', default: '', readers: HANDLERS },
  /** The EventBridge bus completion events go to (AWS; the events function reads the table's stream). */
  eventBus: { name: 'TOOL_LEDGER_EVENT_BUS', kind: 'string', default: '', readers: ['events'] },
  /**
   * Local mode's events queue: the handlers send completion events there after each waited-for
   * transition. Empty on AWS, where the events function reads the table's stream instead.
   */
  eventsQueueUrl: { name: 'TOOL_LEDGER_EVENTS_QUEUE_URL', kind: 'string', default: '', readers: HANDLERS },
  /** Default retention of terminal records, seconds. */
  retentionSeconds: {
    name: 'TOOL_LEDGER_RETENTION_SECONDS',
    kind: 'integer',
    default: 2_592_000,
    readers: HANDLERS_AND_LOCAL,
  },
  /** Lease length beyond a worker's hard deadline, ms. */
  leaseGraceMs: {
    name: 'TOOL_LEDGER_LEASE_GRACE_MS',
    kind: 'integer',
    default: 5_000,
    readers: HANDLERS_AND_LOCAL,
  },
  /** How long a synchronous call may run, ms. */
  syncWaitMs: {
    name: 'TOOL_LEDGER_SYNC_WAIT_MS',
    kind: 'integer',
    default: 25_000,
    readers: HANDLERS_AND_LOCAL,
  },
  /** Approval deadline, seconds. */
  approvalTtlSeconds: {
    name: 'TOOL_LEDGER_APPROVAL_TTL_SECONDS',
    kind: 'integer',
    default: 86_400,
    readers: HANDLERS_AND_LOCAL,
  },
  /** Let a requester approve its own operation. */
  allowSelfApproval: {
    name: 'TOOL_LEDGER_ALLOW_SELF_APPROVAL',
    kind: 'flag',
    default: false,
    readers: HANDLERS_AND_LOCAL,
  },
  /** Partitions of the attention GSI (at least 1: a record's shard is its hash modulo this). */
  attentionShards: {
    name: 'TOOL_LEDGER_ATTENTION_SHARDS',
    kind: 'integer',
    default: 8,
    min: 1,
    readers: HANDLERS_AND_LOCAL,
  },
  /** `unresolved` GSI partitions per tenant (1 keeps each tenant in one). */
  unresolvedShards: {
    name: 'TOOL_LEDGER_UNRESOLVED_SHARDS',
    kind: 'integer',
    default: 1,
    readers: HANDLERS_AND_LOCAL,
  },
  /** A `queued` record not started after this long is enqueued again, ms. */
  queuedStaleMs: {
    name: 'TOOL_LEDGER_QUEUED_STALE_MS',
    kind: 'integer',
    default: 120_000,
    readers: HANDLERS_AND_LOCAL,
  },
  /** First backoff of retries and of reconcile checks, ms; doubles each time. */
  retryBaseMs: {
    name: 'TOOL_LEDGER_RETRY_BASE_MS',
    kind: 'integer',
    default: 2_000,
    readers: HANDLERS_AND_LOCAL,
  },
  /** `unknown` reconcile verdicts before `needs_reconciliation`. */
  maxReconcileChecks: {
    name: 'TOOL_LEDGER_MAX_RECONCILE_CHECKS',
    kind: 'integer',
    default: 5,
    readers: HANDLERS_AND_LOCAL,
  },
  /**
   * Reconciler decisions in flight at once, in a scheduled pass and an operator's. Most decisions are
   * one conditional write and a send (a few milliseconds); after a target's outage thousands are due
   * at once, and 16 at a time clear them within a tick. A slow target delays only the decisions that
   * wait on it.
   */
  reconcileParallelism: {
    name: 'TOOL_LEDGER_RECONCILE_PARALLELISM',
    kind: 'integer',
    default: 16,
    min: 1,
    readers: HANDLERS_AND_LOCAL,
  },
  /**
   * Tool names tenants may declare for operations they execute themselves, and the policy forced on
   * them (functions/domain/caller-tools.ts): `[tenant/]pattern[:approval][:max_attempts=N],…`;
   * unset: any name, nothing forced. Only the API reads it.
   */
  callerTools: { name: 'TOOL_LEDGER_CALLER_TOOLS', kind: 'string', readers: ['api', 'local'] },
  /** Time kept back from the Lambda's remaining time for the commit, ms. */
  commitReserveMs: {
    name: 'TOOL_LEDGER_COMMIT_RESERVE_MS',
    kind: 'integer',
    default: 2_000,
    readers: HANDLERS_AND_LOCAL,
  },

  // The runtime (functions/wiring.ts): clients, tools, the queue's binding.
  /** Local mode: dev credentials, token auth by default, no sender binding. */
  local: { name: 'TOOL_LEDGER_LOCAL', kind: 'flag', default: false, readers: HANDLERS },
  /** Local mode's DynamoDB (dynalite); unset on AWS. */
  dynamoEndpoint: { name: 'TOOL_LEDGER_DYNAMODB_ENDPOINT', kind: 'string', readers: HANDLERS },
  /** Local mode's SQS (fauxqs); unset on AWS. */
  sqsEndpoint: { name: 'TOOL_LEDGER_SQS_ENDPOINT', kind: 'string', readers: HANDLERS },
  /**
   * The bucket whole results too large for their record are kept in (engine/payloads.ts): the
   * construct's or the user's on AWS, local mode's emulated one. Empty: no object store, and such a
   * result is kept as `{truncated: true, size, sha256}`.
   */
  resultsBucket: { name: 'TOOL_LEDGER_RESULTS_BUCKET', kind: 'string', default: '', readers: HANDLERS },
  /** Local mode's S3 (fauxqs, on the data folder); unset on AWS. */
  s3Endpoint: { name: 'TOOL_LEDGER_S3_ENDPOINT', kind: 'string', readers: HANDLERS },
  /** Root of the workspace tools (Lambda: /tmp, the only writable folder, or the shared EFS mount). */
  workspaceDir: {
    name: 'TOOL_LEDGER_WORKSPACE_DIR',
    kind: 'string',
    default: '/tmp/workspace',
    readers: HANDLERS,
  },
  /** Origins `webhook.post` may call. */
  webhookAllow: { name: 'TOOL_LEDGER_WEBHOOK_ALLOW', kind: 'list', readers: HANDLERS_AND_LOCAL },
  /** Origins whose servers dedupe on `Idempotency-Key`. */
  webhookIdempotent: { name: 'TOOL_LEDGER_WEBHOOK_IDEMPOTENT', kind: 'list', readers: HANDLERS_AND_LOCAL },
  /** More endpoints of the deployment itself that tools never reach. */
  reservedEndpoints: { name: 'TOOL_LEDGER_RESERVED_ENDPOINTS', kind: 'list', readers: HANDLERS },
  /** JSON array of the tenants the work queue carries (the contract, §6); the executor reads it. */
  queueTenants: { name: 'TOOL_LEDGER_QUEUE_TENANTS', kind: 'string', readers: ['executor'] },
  /**
   * JSON array of `{"id": "<IAM unique ID>", "tenants": [..] | "*"}`: who may send work for which
   * tenant (the contract, §6, AWS only; unset refuses every message).
   */
  queueSenders: { name: 'TOOL_LEDGER_QUEUE_SENDERS', kind: 'string', readers: ['executor'] },
  /**
   * The ledger's identity, as the table's identity item holds it: set by the construct from the deploy-time
   * identity check, so a deploy against a table without the ledger's identity fails (lib/ledger-identity.ts).
   */
  ledgerId: { name: 'TOOL_LEDGER_LEDGER_ID', kind: 'string', readers: HANDLERS },
  /**
   * JSON object of requests per second each tenant may make, `{"*": 400, "acme": 800}` (`*`: every
   * tenant not named); the API answers 429 `throttled` above it. Unset: no per-tenant limit.
   */
  tenantRateLimits: { name: 'TOOL_LEDGER_TENANT_RATE_LIMITS', kind: 'string', readers: ['api'] },
  /**
   * JSON object of the secrets tools may read, by name: `{"ACME_TOKEN": {"source": "secretsmanager",
   * "id": "<arn>", "field"?: "token"}}` or `{"source": "ssm", "id": "<parameter name>"}`. The values
   * never travel in the environment, only where to read them; unset: none.
   */
  toolSecrets: { name: 'TOOL_LEDGER_TOOL_SECRETS', kind: 'string', readers: HANDLERS },
  /** Upstream MCP servers the gateway serves (functions/mcp/upstreams.ts): `name=url[;option…],…`. */
  mcpUpstreams: { name: 'TOOL_LEDGER_MCP_UPSTREAMS', kind: 'string', readers: HANDLERS_AND_LOCAL },

  // The API's authentication (functions/http/auth.ts).
  /** `iam` (API Gateway's IAM authorization) or `tokens`; default `iam`, `tokens` in local mode. */
  auth: { name: 'TOOL_LEDGER_AUTH', kind: 'string', readers: ['api'] },
  /**
   * Bearer tokens, comma-separated `token=tenant:role+role`. Local mode, when it is not set, makes two at
   * the data folder's first start and keeps them there (functions/local/local-tokens.ts); never a fixed value.
   */
  tokens: { name: 'TOOL_LEDGER_TOKENS', kind: 'string', readers: ['api', 'local'] },
  /** Tenant → role → IAM principals, the part CloudFormation resolves at deploy time (JSON). */
  iamTenants: { name: 'TOOL_LEDGER_IAM_TENANTS', kind: 'string', default: '{}', readers: ['api'] },
  /** The JSON file bundled with the API handler: the part of the tenant map known at synth. */
  iamTenantsFile: { name: 'TOOL_LEDGER_IAM_TENANTS_FILE', kind: 'string', readers: ['api'] },

  // Powertools (functions/observability/): the service dimension and the metrics namespace.
  /** The `service` of every log line and metric. */
  serviceName: { name: 'POWERTOOLS_SERVICE_NAME', kind: 'string', default: 'tool-ledger', readers: HANDLERS },
  /** CloudWatch namespace of the metrics (contract/metrics.ts). */
  metricsNamespace: { name: 'POWERTOOLS_METRICS_NAMESPACE', kind: 'string', readers: HANDLERS },
  /** Powertools writes no EMF at all (local mode sets it unless the user did). */
  metricsDisabled: { name: 'POWERTOOLS_METRICS_DISABLED', kind: 'string', readers: HANDLERS },
  /** Powertools' development mode: indented log lines (local mode's pretty format). */
  powertoolsDev: { name: 'POWERTOOLS_DEV', kind: 'string', readers: HANDLERS },
  /** Powertools' log level. */
  logLevel: { name: 'POWERTOOLS_LOG_LEVEL', kind: 'string', readers: HANDLERS },

  // Local mode (functions/local/settings.ts; the contract, §10).
  /** HTTP port of the API on 127.0.0.1 (0 picks a free one). */
  port: { name: 'PORT', kind: 'integer', default: 3000, readers: ['local'] },
  /** Root of local state: the ledger's files and the workspace. */
  dataDir: { name: 'TOOL_LEDGER_DATA_DIR', kind: 'string', default: '.data', readers: ['local'] },
  /** Reconciler interval, ms. */
  reconcileEveryMs: {
    name: 'TOOL_LEDGER_RECONCILE_EVERY_MS',
    kind: 'integer',
    default: 5_000,
    min: 10,
    readers: ['local'],
  },
  /**
   * Executor invocations at once: one polling loop each, every one taking batches of up to 10; by
   * default the construct's executors ({@link DEFAULT_EXECUTOR_CONCURRENCY}).
   */
  executorConcurrency: {
    name: 'TOOL_LEDGER_EXECUTOR_CONCURRENCY',
    kind: 'integer',
    default: DEFAULT_EXECUTOR_CONCURRENCY,
    min: 1,
    readers: ['local'],
  },
  /** Port of the local DynamoDB on 127.0.0.1 (0 picks a free one). */
  dynamoPort: { name: 'TOOL_LEDGER_DYNAMODB_PORT', kind: 'integer', default: 0, readers: ['local'] },
  /** Port of the local SQS on 127.0.0.1 (0 picks a free one). */
  sqsPort: { name: 'TOOL_LEDGER_SQS_PORT', kind: 'integer', default: 0, readers: ['local'] },
  /** `json` or `pretty` (default: `pretty` on a terminal, `json` otherwise). */
  logFormat: { name: 'TOOL_LEDGER_LOG_FORMAT', kind: 'string', readers: ['local'] },
  /** The deployment's own tools module, loaded instead of the shipped tools. */
  toolsModule: { name: 'TOOL_LEDGER_TOOLS_MODULE', kind: 'string', readers: ['local'] },

  // The CLI and console (cli/connection.ts).
  /** The API's base URL. */
  endpoint: { name: 'TOOL_LEDGER_ENDPOINT', kind: 'string', readers: ['cli'] },
  /** A bearer token (local mode); without one the CLI signs with SigV4. */
  token: { name: 'TOOL_LEDGER_TOKEN', kind: 'string', readers: ['cli'] },
} as const satisfies Record<string, Setting>;

/** The key of one variable in {@link SETTINGS}. */
export type SettingKey = keyof typeof SETTINGS;

/** What {@link readSetting} returns for a kind, with or without a default. */
export type SettingValue<S extends Setting> = S['kind'] extends 'integer'
  ? S extends { default: number }
    ? number
    : number | undefined
  : S['kind'] extends 'flag'
    ? boolean
    : S['kind'] extends 'list'
      ? string[]
      : S extends { default: string }
        ? string
        : string | undefined;

/**
 * Reads one variable as the handlers do: an integer must be a non-negative safe integer (else a
 * {@link SettingError} naming the variable), a flag is on only for `true`, a list is split on commas,
 * a string is taken as given, and an absent variable (or an empty integer) takes the default.
 *
 * @example
 * ```ts
 * readSetting(process.env, SETTINGS.retentionSeconds); // 2592000 when unset
 * readSetting(process.env, SETTINGS.webhookAllow); // ['https://hooks.example.com']
 * ```
 */
export function readSetting<S extends Setting>(env: NodeJS.ProcessEnv, setting: S): SettingValue<S> {
  const raw = env[setting.name];
  switch (setting.kind) {
    case 'integer': {
      if (raw === undefined || raw === '') return setting.default as SettingValue<S>;
      const value = Number(raw);
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new SettingError(setting.name, `${setting.name} must be a non-negative integer`);
      }
      return value as SettingValue<S>;
    }
    case 'flag':
      return (raw === undefined ? setting.default === true : raw === 'true') as SettingValue<S>;
    case 'list':
      return (raw ?? '')
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0) as SettingValue<S>;
    case 'string':
      return (raw ?? setting.default) as SettingValue<S>;
  }
}

/** Every variable one reader reads, in declaration order. */
export function settingsReadBy(reader: SettingReader): Setting[] {
  return Object.values(SETTINGS as Record<string, Setting>).filter((s) => s.readers.includes(reader));
}
