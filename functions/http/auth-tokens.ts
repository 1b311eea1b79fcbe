import { createHash } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { SETTINGS } from '../contract/environment';
import { TENANT_PATTERN } from '../contract/table';
import { AccessError } from '../domain/errors';
import { type Authenticator, type Identity, ROLES, type Role } from './identity';
import { HttpRequest } from './request';

/** Characters a configured token may use (RFC 6750 `b64token`, without the `=` that splits entries). */
const TOKEN = /^[A-Za-z0-9._~+/-]{1,512}$/;
const ROLE_NAMES = new Set<string>(ROLES);

/**
 * Bearer tokens from configuration (local mode, or a deployment that chooses them):
 * `token=tenant:role+role`, comma-separated. A presented token is hashed and looked up by its hash,
 * so comparison time does not depend on how much of a token matched, and the principal is the
 * token's fingerprint (`token:` + 8 hex of SHA-256): stable, loggable, never the token.
 *
 * @example
 * ```ts
 * const auth = new BearerTokenAuthenticator('tl_a…=local:agent+operator,tl_b…=local:approver');
 * auth.authenticate(event); // { tenant: 'local', principal: 'token:1a2b3c4d', roles: Set{'agent','operator'} }
 * ```
 */
export class BearerTokenAuthenticator implements Authenticator {
  readonly challenge = 'Bearer';
  private readonly byHash = new Map<string, Identity>();

  /** @param spec the value of `TOOL_LEDGER_TOKENS`. Errors name the entry's position, never its text. */
  constructor(spec: string) {
    const principals = new Set<string>();
    spec.split(',').forEach((raw, index) => {
      const entry = raw.trim();
      if (entry === '') return;
      const bad = () => new Error(`${SETTINGS.tokens.name} entry ${index + 1} is not token=tenant:role+role`);
      const eq = entry.indexOf('=');
      const colon = entry.lastIndexOf(':');
      if (eq < 1 || colon < eq) throw bad();
      const token = entry.slice(0, eq);
      const tenant = entry.slice(eq + 1, colon);
      const roles = entry.slice(colon + 1).split('+');
      if (!TOKEN.test(token) || !TENANT_PATTERN.test(tenant)) throw bad();
      if (roles.length === 0 || !roles.every((role) => ROLE_NAMES.has(role))) throw bad();
      const hash = sha256(token);
      const principal = `token:${hash.slice(0, 8)}`;
      if (this.byHash.has(hash) || principals.has(principal)) {
        throw new Error(`${SETTINGS.tokens.name} entry ${index + 1} repeats a token`);
      }
      principals.add(principal);
      this.byHash.set(hash, { tenant, principal, roles: new Set(roles as Role[]) });
    });
    if (this.byHash.size === 0) throw new Error(`${SETTINGS.tokens.name} names no token`);
  }

  /** Every tenant some token belongs to (local mode binds its work queue to them: a message naming any other tenant is not run). */
  tenants(): string[] {
    return [...new Set([...this.byHash.values()].map((identity) => identity.tenant))];
  }

  authenticate(event: APIGatewayProxyEvent): Identity {
    const values = new HttpRequest(event).headerValues('authorization');
    if (values.length !== 1) throw unauthenticated();
    const match = /^bearer +(\S+) *$/i.exec(values[0] as string);
    const identity = match ? this.byHash.get(sha256(match[1] as string)) : undefined;
    if (!identity) throw unauthenticated();
    return identity;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function unauthenticated(): AccessError {
  return new AccessError('unauthenticated', 'a valid bearer token is required');
}
