import { describe, expect, it } from 'vitest';
import { assertOperationId, parseIdempotencyKey } from '../../functions/domain/operation-id';

describe('Idempotency-Key parsing', () => {
  it('an sf-string and a bare token name the same ID', () => {
    expect(parseIdempotencyKey(['"run-42"'])).toBe('run-42');
    expect(parseIdempotencyKey(['run-42'])).toBe('run-42');
    expect(parseIdempotencyKey(['"a\\"b"'])).toBe('a"b');
    expect(parseIdempotencyKey(['"a,b"'])).toBe('a,b');
  });

  it.each([
    [undefined, 'idempotency_key_missing'],
    [[], 'idempotency_key_missing'],
    [[''], 'idempotency_key_missing'],
    [['""'], 'idempotency_key_missing'],
    [['a', 'b'], 'idempotency_key_invalid'],
    [['"a", "b"'], 'idempotency_key_invalid'],
    [['a,b'], 'idempotency_key_invalid'],
    [['"unterminated'], 'idempotency_key_invalid'],
    [['has space'], 'idempotency_key_invalid'],
    [['" spaced"'], 'idempotency_key_invalid'],
    [['caf\u00e9'], 'idempotency_key_invalid'],
    [['x'.repeat(256)], 'idempotency_key_invalid'],
  ])('%j is refused with %s', (values, code) => {
    expect(() => parseIdempotencyKey(values as string[] | undefined)).toThrow(
      expect.objectContaining({ code }),
    );
  });

  it('accepts 255 printable characters and refuses 256', () => {
    expect(parseIdempotencyKey(['~'.repeat(255)])).toHaveLength(255);
    expect(() => assertOperationId('~'.repeat(256))).toThrow();
  });
});
