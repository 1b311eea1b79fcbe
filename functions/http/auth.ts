import { readSetting, SETTINGS } from '../contract/environment';
import { IamAuthenticator } from './auth-iam';
import { BearerTokenAuthenticator } from './auth-tokens';
import { iamTenantsJson } from './iam-tenants-source';
import type { Authenticator } from './identity';

/**
 * The authenticator a deployment asked for: `TOOL_LEDGER_AUTH` = `iam` (API Gateway's IAM
 * authorization; tenants from `TOOL_LEDGER_IAM_TENANTS` and the bundled `TOOL_LEDGER_IAM_TENANTS_FILE`) or `tokens` (bearer tokens from
 * `TOOL_LEDGER_TOKENS`). The default is `iam`, except in local mode (`TOOL_LEDGER_LOCAL=true`), which
 * defaults to tokens. There is no default token, anywhere: local mode passes its handlers the tokens it
 * was given or made for its data folder (functions/local/local-tokens.ts).
 *
 * @example
 * ```ts
 * const authenticator = authenticatorFromEnv(process.env);
 * ```
 */
export function authenticatorFromEnv(env: NodeJS.ProcessEnv = process.env): Authenticator {
  const local = readSetting(env, SETTINGS.local);
  const kind = readSetting(env, SETTINGS.auth) || (local ? 'tokens' : 'iam');
  if (kind === 'tokens') {
    const spec = readSetting(env, SETTINGS.tokens);
    if (!spec) throw new Error(`${SETTINGS.auth.name}=tokens needs ${SETTINGS.tokens.name}`);
    return new BearerTokenAuthenticator(spec);
  }
  if (kind === 'iam') return new IamAuthenticator(iamTenantsJson(env));
  throw new Error(`${SETTINGS.auth.name} must be "iam" or "tokens"`);
}
