import type { APIGatewayProxyEvent } from 'aws-lambda';
import { IamAuthenticator } from './auth-iam';
import { BearerTokenAuthenticator, DEV_TOKENS } from './auth-tokens';
import { iamTenantsJson } from './iam-tenants-source';

/** What a caller may do within its tenant. */
export type Role = 'agent' | 'approver' | 'operator';

/** Every role, for parsing configuration. */
export const ROLES: readonly Role[] = ['agent', 'approver', 'operator'];

/**
 * Who made a request. The tenant comes from here and only from here: a body never names one
 * (SPEC §1). `principal` is a label safe to store and log (an IAM ARN, or a token's fingerprint).
 */
export interface Identity {
  tenant: string;
  principal: string;
  roles: ReadonlySet<Role>;
}

/**
 * Turns a request into an {@link Identity}, or throws `unauthenticated` (401). Implementations never
 * log or return the credential they read.
 *
 * @example
 * ```ts
 * const identity = authenticator.authenticate(event);
 * if (!identity.roles.has('approver')) throw new AccessError('forbidden', '...');
 * ```
 */
export interface Authenticator {
  authenticate(event: APIGatewayProxyEvent): Identity;
  /** `WWW-Authenticate` value sent with a 401. */
  readonly challenge: string;
}

/**
 * The authenticator a deployment asked for: `TOOL_LEDGER_AUTH` = `iam` (API Gateway's IAM
 * authorization; tenants from `TOOL_LEDGER_IAM_TENANTS` and the bundled `TOOL_LEDGER_IAM_TENANTS_FILE`) or `tokens` (bearer tokens from
 * `TOOL_LEDGER_TOKENS`). The default is `iam`, except in local mode (`TOOL_LEDGER_LOCAL=true`), which
 * defaults to tokens and to SPEC §10's dev tokens when none are set. Dev tokens are never a default
 * outside local mode.
 *
 * @example
 * ```ts
 * const authenticator = authenticatorFromEnv(process.env);
 * ```
 */
export function authenticatorFromEnv(env: NodeJS.ProcessEnv = process.env): Authenticator {
  const local = env.TOOL_LEDGER_LOCAL === 'true';
  const kind = env.TOOL_LEDGER_AUTH || (local ? 'tokens' : 'iam');
  if (kind === 'tokens') {
    const spec = env.TOOL_LEDGER_TOKENS || (local ? DEV_TOKENS : undefined);
    if (!spec) throw new Error('TOOL_LEDGER_AUTH=tokens needs TOOL_LEDGER_TOKENS');
    return new BearerTokenAuthenticator(spec);
  }
  if (kind === 'iam') return new IamAuthenticator(iamTenantsJson(env));
  throw new Error('TOOL_LEDGER_AUTH must be "iam" or "tokens"');
}
