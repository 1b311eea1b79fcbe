import type { APIGatewayProxyEvent } from 'aws-lambda';
import { LEDGER_ROLES, type LedgerRole } from '../contract/routes';

/** What a caller may do within its tenant (the roles of functions/contract/routes.ts). */
export type Role = LedgerRole;

/** Every role, for parsing configuration. */
export const ROLES: readonly Role[] = LEDGER_ROLES;

/**
 * Who made a request. The tenant comes from here and only from here: a body never names one
 * (the contract, §1). `principal` is a label safe to store and log (an IAM ARN, or a token's fingerprint).
 */
export interface Identity {
  tenant: string;
  principal: string;
  /** The caller's IAM unique ID (`AROA…:<session>`), where the authenticator knows it (AWS). */
  uniqueId?: string;
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
