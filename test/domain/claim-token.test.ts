import { describe, expect, it } from 'vitest';
import {
  CLAIM_ID_PATTERN,
  claimOwner,
  claimTokenAttempt,
  isCallerOwner,
  newClaimToken,
} from '../../functions/domain/claim-token';

/** The claim token of an operation its caller executes: a secret whose hash is the lease owner. */

const RESERVATION = '0b7f5c1e-8f0e-4d43-9c1b-5b2f1a3e9d11';
const CLAIM_ID = 'Q2xhaW0tSWQtMDEyMzQ1Njc4OQ';

describe('claim tokens', () => {
  it('carry their attempt and 256 bits, random unless derived from a claim_id', () => {
    const a = newClaimToken(3, RESERVATION);
    const b = newClaimToken(3, RESERVATION);
    expect(a).toMatch(/^tlc1\.3\.[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(claimTokenAttempt(a)).toBe(3);
  });

  it('derived from a claim_id: the same for the same reservation, attempt and claim_id, different otherwise', () => {
    const token = newClaimToken(1, RESERVATION, CLAIM_ID);
    expect(newClaimToken(1, RESERVATION, CLAIM_ID)).toBe(token);
    expect(newClaimToken(2, RESERVATION, CLAIM_ID)).not.toBe(token.replace('tlc1.1.', 'tlc1.2.'));
    expect(newClaimToken(1, `${RESERVATION}x`, CLAIM_ID)).not.toBe(token);
    expect(newClaimToken(1, RESERVATION, `${CLAIM_ID}x`)).not.toBe(token);
    // Length-prefixed parts: moving a character across the boundary changes the token.
    expect(newClaimToken(1, 'ab', 'c'.repeat(22))).not.toBe(newClaimToken(1, 'a', `b${'c'.repeat(22)}`));
  });

  it('are stored as a hash that never collides with the ledger’s own lease owners', () => {
    const token = newClaimToken(1, RESERVATION);
    const owner = claimOwner(token);
    expect(owner).toMatch(/^caller:[A-Za-z0-9_-]{43}$/);
    expect(owner).not.toContain(token.split('.')[2]);
    expect(isCallerOwner(owner)).toBe(true);
    expect(isCallerOwner('w-1a2b3c4d/0b7f5c1e-8f0e-4d43-9c1b-5b2f1a3e9d11')).toBe(false);
    expect(isCallerOwner(undefined)).toBe(false);
  });

  it('anything else is not a token', () => {
    for (const value of [
      `tlc1.0.${'a'.repeat(43)}`,
      `tlc1.1.${'a'.repeat(42)}`,
      `tlc2.1.${'a'.repeat(43)}`,
      `tlc1.01.${'a'.repeat(43)}`,
      `tlc1.1.${'a'.repeat(42)}=`,
      42,
      undefined,
    ]) {
      expect(claimTokenAttempt(value)).toBeUndefined();
    }
  });

  it('a claim_id is 22 to 128 characters of base64url', () => {
    expect(CLAIM_ID_PATTERN.test('a'.repeat(22))).toBe(true);
    expect(CLAIM_ID_PATTERN.test('a'.repeat(128))).toBe(true);
    expect(CLAIM_ID_PATTERN.test('a'.repeat(21))).toBe(false);
    expect(CLAIM_ID_PATTERN.test('a'.repeat(129))).toBe(false);
    expect(CLAIM_ID_PATTERN.test(`${'a'.repeat(22)}=`)).toBe(false);
  });
});
