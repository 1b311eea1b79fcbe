import { resolve } from 'node:path';
import { type LedgerConfig, loadConfig } from '../config';
import { LOCAL_WEBHOOK_ALLOW, SETTINGS, type Setting, settingsReadBy } from '../contract/environment';
import { TENANT_PATTERN } from '../contract/table';
import { BearerTokenAuthenticator } from '../http/auth-tokens';
import { ROLES } from '../http/identity';
import { type McpUpstream, parseUpstreams, UpstreamSettingError } from '../mcp/upstreams';
import { entriesReaching, parseAllowedOrigin } from '../tools/origin-policy';

/**
 * The settings of `npm start` (the contract, §10), read once from the environment with their defaults. The
 * engine's own settings (retention, lease grace, sync wait, approvals) are read by functions/config.ts
 * from the same variables; they are checked here too, so that a typo stops local mode before any
 * server starts rather than at the first request. A setting that cannot be used stops the start with
 * exit code 2 and a message naming the variable and the offending entry (a token's own text is never
 * printed: entries are shown as `<token>=tenant:roles`).
 */

/** How log lines are printed: one JSON object per line, or indented for people. */
export type LogFormat = 'json' | 'pretty';

/** Origins `webhook.post` may call in local mode when `TOOL_LEDGER_WEBHOOK_ALLOW` is not set. */
export const DEFAULT_WEBHOOK_ALLOW = LOCAL_WEBHOOK_ALLOW;

/** One bearer token of `TOOL_LEDGER_TOKENS`: `token=tenant:role+role`. */
export interface LocalToken {
  token: string;
  tenant: string;
  roles: string[];
}

/** Everything local mode needs to start. */
export interface LocalSettings {
  /** HTTP port of the API on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Root of local state. */
  dataDir: string;
  /** dynalite's LevelDB folder (persists across restarts). */
  ledgerDir: string;
  /** Root of the workspace tools. */
  workspaceDir: string;
  /** `TOOL_LEDGER_TOKENS` as given, or the tokens made for the data folder. */
  tokensSpec: string;
  /** The parsed tokens. */
  tokens: LocalToken[];
  /**
   * The data folder's tokens file when the tokens are the ones local mode made for it (then they are
   * printed for people); undefined when they came from `TOOL_LEDGER_TOKENS` (never printed).
   */
  tokensFile: string | undefined;
  /** Every tenant named by a token: the tenants local mode's work queue may carry, and no other. */
  tenants: string[];
  /** `TOOL_LEDGER_WEBHOOK_ALLOW` as given (or the default). */
  webhookAllow: string;
  /** Reconciler interval, ms. */
  reconcileEveryMs: number;
  /**
   * Executor invocations at once: one polling loop each, every one taking batches of up to 10 (the
   * construct's default reserved concurrency for the executor).
   */
  executorConcurrency: number;
  /** Port of dynalite on 127.0.0.1; 0 picks a free one. */
  dynamoPort: number;
  /** Port of fauxqs on 127.0.0.1; 0 picks a free one. */
  sqsPort: number;
  /** Ledger table name. */
  tableName: string;
  /** `TOOL_LEDGER_LOG_FORMAT`: default `pretty` on a terminal, `json` otherwise. */
  logFormat: LogFormat;
}

/** A setting that cannot be used; the message names the variable and what it accepts. */
export class LocalSettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LocalSettingsError';
  }
}

/**
 * Integer variables the handlers read, with their least useful value (the contract's `min`); checked
 * here for early failure (a zero shard count would divide by zero at the first write).
 */
const ENGINE_INTEGERS: readonly Setting[] = settingsReadBy('executor').filter(
  (setting) => setting.kind === 'integer',
);

/** Most executor loops local mode runs: each holds a long poll open on the local queue. */
const MAX_EXECUTOR_CONCURRENCY = 100;

/** The roles a token may carry. */
const ROLE_NAMES: ReadonlySet<string> = new Set(ROLES);

/**
 * The data folder local mode uses: `TOOL_LEDGER_DATA_DIR`, else `.data` in the working folder.
 *
 * @example
 * ```ts
 * const tokens = await localTokens(dataDirOf(process.env));
 * ```
 */
export function dataDirOf(env: NodeJS.ProcessEnv): string {
  return resolve(nonEmpty(env[SETTINGS.dataDir.name]) ?? SETTINGS.dataDir.default);
}

/**
 * Reads and checks the local settings. `generated`: the data folder's own tokens
 * (functions/local/local-tokens.ts), used when `TOOL_LEDGER_TOKENS` is not set; with neither, the start
 * is refused.
 *
 * @example
 * ```ts
 * const settings = loadLocalSettings(process.env, true, await localTokens(dataDirOf(process.env)));
 * settings.tenants; // ['local'] with the data folder's tokens
 * ```
 */
export function loadLocalSettings(
  env: NodeJS.ProcessEnv,
  terminal: boolean = process.stdout.isTTY === true,
  generated?: { spec: string; file: string },
): LocalSettings {
  for (const { name, min = 0 } of ENGINE_INTEGERS) {
    if (nonEmpty(env[name]) !== undefined && integer(env, name, 0) < min) {
      throw new LocalSettingsError(`${name}=${env[name]?.trim()}: must be at least ${min}`);
    }
  }
  const selfApproval = env[SETTINGS.allowSelfApproval.name];
  if (
    selfApproval !== undefined &&
    selfApproval !== '' &&
    selfApproval !== 'true' &&
    selfApproval !== 'false'
  ) {
    throw new LocalSettingsError(`${SETTINGS.allowSelfApproval.name}=${selfApproval}: must be true or false`);
  }
  const logFormat = nonEmpty(env[SETTINGS.logFormat.name]) ?? (terminal ? 'pretty' : 'json');
  if (logFormat !== 'json' && logFormat !== 'pretty') {
    throw new LocalSettingsError(`${SETTINGS.logFormat.name}=${logFormat}: must be json or pretty`);
  }
  const upstreams = checkMcpUpstreams(env);
  const webhookAllow = nonEmpty(env[SETTINGS.webhookAllow.name]) ?? DEFAULT_WEBHOOK_ALLOW;
  checkOrigins(SETTINGS.webhookAllow.name, webhookAllow);
  checkAllowReachesNoUpstream(webhookAllow, upstreams);
  checkOrigins(SETTINGS.webhookIdempotent.name, env[SETTINGS.webhookIdempotent.name] ?? '');
  const dataDir = dataDirOf(env);
  const given = nonEmpty(env[SETTINGS.tokens.name]);
  const tokensSpec = given ?? generated?.spec;
  if (tokensSpec === undefined) {
    throw new LocalSettingsError(
      `${SETTINGS.tokens.name} is not set and no tokens were made for the data folder`,
    );
  }
  let tokens: LocalToken[];
  try {
    tokens = parseTokens(tokensSpec);
  } catch (error) {
    // The data folder's own file: say which file, and how to start over (its text is never shown).
    if (given !== undefined || generated === undefined || !(error instanceof LocalSettingsError)) throw error;
    throw new LocalSettingsError(
      `the tokens file ${generated.file} is not valid (${error.message.replace(`${SETTINGS.tokens.name} `, '')}); delete it to make new tokens`,
    );
  }
  const every = SETTINGS.reconcileEveryMs;
  const reconcileEveryMs = integer(env, every.name, every.default);
  if (reconcileEveryMs < every.min) {
    throw new LocalSettingsError(`${every.name}=${reconcileEveryMs}: must be at least ${every.min}`);
  }
  const loops = SETTINGS.executorConcurrency;
  const executorConcurrency = integer(env, loops.name, loops.default);
  if (executorConcurrency < loops.min || executorConcurrency > MAX_EXECUTOR_CONCURRENCY) {
    throw new LocalSettingsError(
      `${loops.name}=${executorConcurrency}: must be from ${loops.min} to ${MAX_EXECUTOR_CONCURRENCY}`,
    );
  }
  // The handlers read the same variables at their cold start: whatever they would refuse, refuse now.
  let callerTools: LedgerConfig['callerTools'];
  try {
    callerTools = loadConfig(env).callerTools;
    new BearerTokenAuthenticator(tokensSpec);
  } catch (error) {
    throw new LocalSettingsError(error instanceof Error ? error.message : String(error));
  }
  checkCallerToolTenants(callerTools, tokens);
  return {
    port: port(env, SETTINGS.port.name, SETTINGS.port.default),
    dataDir,
    ledgerDir: resolve(dataDir, 'ledger'),
    workspaceDir: resolve(dataDir, 'workspace'),
    tokensSpec,
    tokens,
    tokensFile: given === undefined ? generated?.file : undefined,
    tenants: [...new Set(tokens.map((t) => t.tenant))],
    webhookAllow,
    reconcileEveryMs,
    executorConcurrency,
    dynamoPort: port(env, SETTINGS.dynamoPort.name, SETTINGS.dynamoPort.default),
    sqsPort: port(env, SETTINGS.sqsPort.name, SETTINGS.sqsPort.default),
    tableName: nonEmpty(env[SETTINGS.tableName.name]) ?? SETTINGS.tableName.default,
    logFormat,
  };
}

/**
 * Parses `token=tenant:role+role,…`. The tenant is everything between `=` and the last `:`, so tenants
 * may themselves contain `:`. Two tenants that differ only by case are refused. Each error names the
 * entry by position and shape, never the token.
 */
export function parseTokens(spec: string): LocalToken[] {
  const tokens: LocalToken[] = [];
  // Workspace folders keep the tenant's case: on a case-insensitive file system (macOS, Windows by
  // default) `Acme` and `acme` would be one folder, and each tenant could read the other's files.
  const byFoldedName = new Map<string, string>();
  spec.split(',').forEach((entry, index) => {
    const trimmed = entry.trim();
    if (trimmed === '') return;
    const eq = trimmed.indexOf('=');
    const colon = trimmed.lastIndexOf(':');
    const token = trimmed.slice(0, eq);
    const tenant = trimmed.slice(eq + 1, colon);
    const roles = trimmed.slice(colon + 1).split('+');
    const shown = eq > 0 ? `<token>${trimmed.slice(eq)}` : '<token>';
    const bad = (why: string) =>
      new LocalSettingsError(`${SETTINGS.tokens.name} entry ${index + 1} (${shown}): ${why}`);
    if (eq <= 0 || colon <= eq) throw bad('must be token=tenant:role+role');
    if (!TENANT_PATTERN.test(tenant)) throw bad(`tenant "${tenant}" must match ${TENANT_PATTERN.source}`);
    for (const role of roles) {
      if (!ROLE_NAMES.has(role)) throw bad(`unknown role "${role}" (roles: ${ROLES.join(', ')})`);
    }
    const folded = tenant.toLowerCase();
    const other = byFoldedName.get(folded);
    if (other !== undefined && other !== tenant) {
      throw bad(
        `tenant "${tenant}" differs from tenant "${other}" only by case (their workspace folders would be one on a case-insensitive file system); name them apart`,
      );
    }
    byFoldedName.set(folded, tenant);
    tokens.push({ token, tenant, roles });
  });
  if (tokens.length === 0) throw new LocalSettingsError(`${SETTINGS.tokens.name} names no token`);
  return tokens;
}

/**
 * `TOOL_LEDGER_MCP_UPSTREAMS`, the MCP gateway's upstreams: the handlers read it from the environment
 * themselves (functions/mcp/gateway.ts); it is parsed here only so that a malformed entry stops local
 * mode at start, naming the entry.
 */
function checkMcpUpstreams(env: NodeJS.ProcessEnv): McpUpstream[] {
  try {
    return parseUpstreams(env[SETTINGS.mcpUpstreams.name]);
  } catch (error) {
    if (error instanceof UpstreamSettingError) throw new LocalSettingsError(error.message);
    throw error;
  }
}

/**
 * `TOOL_LEDGER_CALLER_TOOLS` entries for one tenant must name a tenant of the tokens: an entry for a
 * tenant nobody can act for is a typo that would otherwise leave the intended tenant refused.
 */
function checkCallerToolTenants(rules: LedgerConfig['callerTools'], tokens: LocalToken[]): void {
  const tenants = new Set(tokens.map((token) => token.tenant));
  rules?.forEach((rule, index) => {
    if (rule.tenant !== undefined && !tenants.has(rule.tenant)) {
      throw new LocalSettingsError(
        `${SETTINGS.callerTools.name} entry ${index + 1}: tenant "${rule.tenant}" has no token in ${SETTINGS.tokens.name}`,
      );
    }
  });
}

/**
 * The gateway's upstreams are the deployment's own endpoints, which no tool may reach: an allow-list
 * entry that names one outright contradicts that, and is refused (the handlers would refuse the calls
 * anyway). A port-less loopback entry, such as the default, allows any port and has the upstreams'
 * ports carved out at run time instead.
 */
function checkAllowReachesNoUpstream(webhookAllow: string, upstreams: readonly McpUpstream[]): void {
  const entries = splitList(webhookAllow);
  const [first] = entriesReaching(
    entries,
    upstreams.map((u) => u.url),
    { local: true },
  );
  if (first === undefined) return;
  throw new LocalSettingsError(
    `${SETTINGS.webhookAllow.name} entry ${first.entry + 1} (${entries[first.entry]}) reaches ` +
      `${SETTINGS.mcpUpstreams.name} entry "${upstreams[first.endpoint]?.name}": tools must never reach the ` +
      "gateway's own upstream MCP servers (webhook.post would call their tools without the ledger); remove the entry",
  );
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/**
 * An origin list of `webhook.post`, split as functions/wiring.ts splits it. The tool parses it only when
 * the handlers first build their tools, so a malformed entry would otherwise start fine and answer 500
 * to every request. Origins are not secrets: the entry is shown as written.
 */
function checkOrigins(name: string, raw: string): void {
  const entries = splitList(raw);
  entries.forEach((entry, index) => {
    try {
      parseAllowedOrigin(entry);
    } catch (error) {
      throw new LocalSettingsError(
        `${name} entry ${index + 1} (${entry}): ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value)) {
    throw new LocalSettingsError(`${name}=${raw}: must be a non-negative integer`);
  }
  return value;
}

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = integer(env, name, fallback);
  if (value > 65_535) {
    throw new LocalSettingsError(`${name}=${value}: must be a port number (0 picks a free one)`);
  }
  return value;
}
