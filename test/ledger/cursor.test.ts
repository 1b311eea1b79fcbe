import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidCursorError } from '../../functions/engine/operation-store';
import { type CursorShape, decodeCursor, encodeCursor } from '../../functions/ledger/cursor';

/**
 * The paging cursor codec on its own: a cursor is caller input, so the decoder accepts exactly the keys
 * a listing of this tenant could have issued and refuses everything else with one typed error (the
 * API's 400 `validation_failed`), before anything reaches DynamoDB.
 */

const LISTING: CursorShape = {
  partition: { attribute: 'unresolved_tenant', value: 'acme' },
  sortAttribute: 'unresolved_at',
  tenant: 'acme',
};
const ATTENTION: CursorShape = {
  partition: { attribute: 'attention_shard', value: 's003' },
  sortAttribute: 'attention_at',
};
const ISSUED = { pk: 'acme#run-42', sk: 'op', unresolved_tenant: 'acme', unresolved_at: 1_764_600_000_000 };

const encode = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
const refused =
  (cursor: string, shape = LISTING) =>
  () =>
    decodeCursor(cursor, shape);

describe('cursor codec', () => {
  it('round-trips every key a listing can issue: any tenant, any operation ID, any epoch-ms position', () => {
    const operationId = fc.stringMatching(/^[\x21-\x7e]{1,255}$/);
    const tenant = fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/);
    fc.assert(
      fc.property(tenant, operationId, fc.maxSafeNat(), (t, id, at) => {
        const key = { pk: `${t}#${id}`, sk: 'op', unresolved_tenant: t, unresolved_at: at };
        const shape: CursorShape = { ...LISTING, partition: { ...LISTING.partition, value: t }, tenant: t };
        expect(decodeCursor(encodeCursor(key), shape)).toEqual(key);
      }),
    );
    const attention = { pk: 'other#x', sk: 'op', attention_shard: 's003', attention_at: 5 };
    expect(decodeCursor(encodeCursor(attention), ATTENTION)).toEqual(attention);
  });

  it('no cursor decodes to no start key', () => {
    expect(decodeCursor(undefined, LISTING)).toBeUndefined();
  });

  it.each([
    ['an empty sk', { ...ISSUED, sk: '' }],
    ['another item kind’s sk', { ...ISSUED, sk: 'marker' }],
    ['a 3,000-byte pk', { ...ISSUED, pk: `acme#${'x'.repeat(3000)}` }],
    ['a pk without a tenant', { ...ISSUED, pk: 'run-42' }],
    ['a pk with an empty operation ID', { ...ISSUED, pk: 'acme#' }],
    ['a pk with a space in the operation ID', { ...ISSUED, pk: 'acme#run 42' }],
    ['another tenant’s pk', { ...ISSUED, pk: 'other#run-42' }],
    ['another tenant’s whole key', { ...ISSUED, pk: 'other#run-42', unresolved_tenant: 'other' }],
    ['unresolved_at 1e300', { ...ISSUED, unresolved_at: 1e300 }],
    ['a fractional position', { ...ISSUED, unresolved_at: 1.5 }],
    ['a negative position', { ...ISSUED, unresolved_at: -1 }],
    ['a position past 2^53', { ...ISSUED, unresolved_at: 2 ** 53 }],
    ['a position as a string', { ...ISSUED, unresolved_at: '1764600000000' }],
    ['a pk as a number', { ...ISSUED, pk: 42 }],
    ['an sk as DynamoDB JSON', { ...ISSUED, sk: { S: 'op' } }],
    ['a null partition', { ...ISSUED, unresolved_tenant: null }],
    ['an extra attribute', { ...ISSUED, state: 'uncertain' }],
    ['a missing attribute', { pk: ISSUED.pk, sk: ISSUED.sk, unresolved_tenant: 'acme' }],
    ['an empty object', {}],
    ['an array', [ISSUED]],
    ['null', null],
    ['a number', 7],
    ['a string', 'acme#run-42'],
  ])('%s is refused', (_name, value) => {
    expect(refused(encode(value))).toThrow(InvalidCursorError);
  });

  it('the attention shard of another partition is refused', () => {
    const key = { pk: 'acme#x', sk: 'op', attention_shard: 's004', attention_at: 5 };
    expect(refused(encodeCursor(key), ATTENTION)).toThrow(InvalidCursorError);
  });

  it.each([
    ['not base64url', 'not-a-cursor!'],
    ['base64url of something that is not JSON', Buffer.from('{nope').toString('base64url')],
    ['standard base64 padding', `${encodeCursor(ISSUED)}==`],
    ['an over-long cursor', 'A'.repeat(5000)],
    ['empty', ''],
  ])('%s is refused', (_name, cursor) => {
    expect(refused(cursor)).toThrow(InvalidCursorError);
  });

  it('whatever a caller sends, the decoder either returns one of this tenant’s keys or refuses', () => {
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.record(
        {
          pk: fc.oneof(fc.string(), fc.constant('acme#run-1'), fc.constant('other#run-1'), fc.integer()),
          sk: fc.oneof(fc.constant('op'), fc.string(), fc.integer()),
          unresolved_tenant: fc.oneof(fc.constant('acme'), fc.string()),
          unresolved_at: fc.oneof(fc.integer(), fc.double(), fc.string()),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(fc.oneof(value.map(encode), fc.string()), (cursor) => {
        let key: Record<string, unknown> | undefined;
        try {
          key = decodeCursor(cursor, LISTING);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidCursorError);
          return;
        }
        expect(key?.sk).toBe('op');
        expect(key?.unresolved_tenant).toBe('acme');
        expect(String(key?.pk).startsWith('acme#')).toBe(true);
        expect(Number.isSafeInteger(key?.unresolved_at)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
