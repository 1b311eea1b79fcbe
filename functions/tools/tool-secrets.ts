import { SettingError } from '../contract/environment';

/**
 * Secrets a deployment's tools read (an API token for a target), without the values ever travelling
 * in the environment or the template: the construct names where each lives (a Secrets Manager secret
 * or an SSM SecureString parameter, `TOOL_LEDGER_TOOL_SECRETS`) and grants reading it to the
 * functions that run tools; a tool reads it when it runs, through `env.secret(name)`, which Powertools
 * Parameters fetches and caches for a few minutes (a rotated secret is picked up within that). In
 * local mode, without the variable, a secret is the environment variable of the same name.
 */

/** Where one secret lives. */
export interface SecretSource {
  source: 'secretsmanager' | 'ssm';
  /** The secret's ARN, or the parameter's name. */
  id: string;
  /** For a JSON secret: the member holding the value. */
  field?: string;
}

/** How long a fetched value is used before it is fetched again, seconds. */
const CACHE_SECONDS = 300;

/** Secret names: what a tool asks for, like an environment variable's. */
export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * Parses `TOOL_LEDGER_TOOL_SECRETS`; undefined when unset.
 *
 * @example
 * ```ts
 * parseToolSecrets('{"ACME_TOKEN":{"source":"ssm","id":"/acme/token"}}', 'TOOL_LEDGER_TOOL_SECRETS');
 * ```
 */
export function parseToolSecrets(
  raw: string | undefined,
  variable: string,
): Readonly<Record<string, SecretSource>> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const bad = () => new SettingError(variable, `${variable} must be a JSON object of secret sources by name`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw bad();
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw bad();
  for (const [name, source] of Object.entries(value)) {
    const s = source as Partial<SecretSource> | null;
    if (
      !SECRET_NAME_PATTERN.test(name) ||
      s === null ||
      typeof s !== 'object' ||
      (s.source !== 'secretsmanager' && s.source !== 'ssm') ||
      typeof s.id !== 'string' ||
      (s.field !== undefined && typeof s.field !== 'string')
    ) {
      throw bad();
    }
  }
  return value as Record<string, SecretSource>;
}

/** The error a tool gets for a secret the deployment does not name (never its value, never the source). */
export class SecretUnavailableError extends Error {
  constructor(name: string, reason: string) {
    super(`secret ${name} is not available: ${reason}`);
    this.name = 'SecretUnavailableError';
  }
}

/** Fetches one secret's text (Powertools Parameters, loaded at the first use, with its cache). */
export type SecretFetcher = (source: SecretSource) => Promise<string>;

const powertoolsFetch: SecretFetcher = async (source) => {
  if (source.source === 'secretsmanager') {
    const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
    const value = await getSecret(source.id, { maxAge: CACHE_SECONDS });
    return typeof value === 'string' ? value : Buffer.from(value as Uint8Array).toString('utf8');
  }
  const { getParameter } = await import('@aws-lambda-powertools/parameters/ssm');
  return (await getParameter(source.id, { decrypt: true, maxAge: CACHE_SECONDS })) ?? '';
};

/**
 * The `secret(name)` of a tool environment: from the named sources when the deployment names any,
 * else (local mode only) from the process environment.
 */
export function secretReader(
  sources: Readonly<Record<string, SecretSource>> | undefined,
  local: boolean,
  env: NodeJS.ProcessEnv,
  fetch: SecretFetcher = powertoolsFetch,
): (name: string) => Promise<string> {
  return async (name) => {
    const source = sources?.[name];
    if (source === undefined) {
      const fromEnv = local && sources === undefined ? env[name] : undefined;
      if (fromEnv !== undefined) return fromEnv;
      throw new SecretUnavailableError(name, 'the deployment names no such secret (toolSecrets)');
    }
    const text = await fetch(source);
    if (source.field === undefined) return text;
    const member = (JSON.parse(text) as Record<string, unknown>)[source.field];
    if (typeof member !== 'string')
      throw new SecretUnavailableError(name, `its JSON has no string "${source.field}"`);
    return member;
  };
}
