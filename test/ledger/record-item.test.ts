import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { toAttributes } from '../../functions/ledger/record-item';

/*
 * toAttributes converts strings, safe numbers and lists of strings itself and hands everything else
 * to util-dynamodb: its output, and its errors, are util-dynamodb's own.
 */

const OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** What util-dynamodb's marshall makes of `value`: its attributes, or the message it throws. */
function marshalled(value: object): unknown {
  try {
    return marshall(value, OPTIONS);
  } catch (error) {
    return (error as Error).message;
  }
}

function converted(value: object): unknown {
  try {
    return toAttributes(value);
  } catch (error) {
    return (error as Error).message;
  }
}

describe('toAttributes', () => {
  it.each([
    [
      'strings, numbers and lists of strings',
      { s: 'x', e: '', n: 1, z: -0, f: 1.5, history: ['{"a":1}', '{}'] },
    ],
    ['extreme safe numbers', { max: Number.MAX_SAFE_INTEGER, min: Number.MIN_SAFE_INTEGER }],
    ['booleans, null and nested maps', { b: true, nul: null, m: { x: 1, y: undefined, l: [{ q: 's' }] } }],
    ['mixed and empty lists', { mixed: ['a', 1, undefined], empty: [] }],
    ['absent values and functions, left out', { u: undefined, f: () => 1, s: 'kept' }],
    ['sets and binary', { set: new Set(['a', 'b']), bin: new Uint8Array([1, 2]) }],
    ['an object without prototype', Object.assign(Object.create(null), { s: 'x', n: 2 })],
    ['an unsafe number', { n: Number.MAX_SAFE_INTEGER + 2 }],
    ['NaN', { n: Number.NaN }],
    ['Infinity', { n: Number.NEGATIVE_INFINITY }],
    ['a class instance', { c: new Date(0) }],
  ])('converts %s as util-dynamodb does', (_, value) => {
    expect(converted(value)).toEqual(marshalled(value));
  });

  it('refuses a class instance at the top as util-dynamodb does', () => {
    class Item {
      s = 'x';
    }
    expect(converted(new Item())).toEqual(marshalled(new Item()));
    expect(typeof converted(new Item())).toBe('string');
  });
});
