import { createHash, randomBytes } from 'node:crypto';

/**
 * The claim token of an operation its caller executes (the contract, §14): the secret that proves a
 * heartbeat or an outcome comes from the request that won the claim of that attempt. The ledger keeps
 * only its hash, as the attempt's lease owner (`caller:` + base64url SHA-256), so neither a table read
 * nor a view can give it away; the ledger's own workers' owners look like `<workerId>/<uuid>`, so the
 * two kinds never collide.
 *
 * Format: `tlc1.<attempt>.<43 base64url characters>`. The attempt inside lets the outcome route tell an
 * outcome of a superseded attempt (kept as `late_outcome`, once the token is found among the record's
 * superseded claims) from one of the current attempt.
 *
 * The 43 characters are 256 random bits, or, when the claim request carried a `claim_id`, derived from
 * the record's `reservation_id` (a random value never shown), the attempt and the `claim_id`: the same
 * claim request sent again after a lost answer recomputes the same token and gets its claim back,
 * while nobody without that `claim_id` can. The parts are length-prefixed, as in the downstream key.
 */

/** A token: its version, the attempt it claims, its secret part. */
const TOKEN = /^tlc1\.([1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/;

/** A `claim_id`: at least 128 bits as base64url (22 characters), at most 128 characters. */
export const CLAIM_ID_PATTERN = /^[A-Za-z0-9_-]{22,128}$/;

/** The prefix of a lease owner that is a caller's claim. */
const CALLER_OWNER_PREFIX = 'caller:';

/**
 * A new claim token for `attempt`: random, or derived from `claimId` when one is given.
 *
 * @example
 * ```ts
 * newClaimToken(1, record.reservation_id); // 'tlc1.1.' + 43 random base64url characters
 * newClaimToken(1, record.reservation_id, 'Yx3…'); // the same value every time for that claim_id
 * ```
 */
export function newClaimToken(attempt: number, reservationId: string, claimId?: string): string {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new Error('a claim names an attempt from 1');
  if (claimId === undefined) return `tlc1.${attempt}.${randomBytes(32).toString('base64url')}`;
  if (reservationId === '') throw new Error('a derived claim token needs the reservation of its record');
  const hash = createHash('sha256');
  hash.update('tool-ledger claim v1');
  for (const part of [reservationId, String(attempt), claimId]) {
    hash.update(`\u0000${Buffer.byteLength(part, 'utf8')}:`);
    hash.update(part, 'utf8');
  }
  return `tlc1.${attempt}.${hash.digest('base64url')}`;
}

/**
 * The lease owner a token stands for: what the record stores in its place.
 *
 * @example
 * ```ts
 * claimOwner(token); // 'caller:' + 43 base64url characters
 * ```
 */
export function claimOwner(token: string): string {
  return `${CALLER_OWNER_PREFIX}${createHash('sha256').update(token, 'utf8').digest('base64url')}`;
}

/** The attempt a well-formed token claims, or undefined for anything that is not a token. */
export function claimTokenAttempt(token: unknown): number | undefined {
  if (typeof token !== 'string') return undefined;
  const match = TOKEN.exec(token);
  return match ? Number(match[1]) : undefined;
}

/** True for a lease owner that is a caller's claim (not one of the ledger's own workers). */
export function isCallerOwner(owner: string | undefined): boolean {
  return owner?.startsWith(CALLER_OWNER_PREFIX) === true;
}
