import { createHash } from 'node:crypto';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { canonicalCall, MAX_CANONICAL_ARGUMENTS_BYTES } from '../../functions/domain/digest';
import { downstreamKey } from '../../functions/domain/downstream-key';
import { PayloadTooLargeError, ValidationError } from '../../functions/domain/errors';
import { parseIJson } from '../../functions/domain/i-json';

const limits = { maxDepth: 40, maxBytes: 256 * 1024 };

describe('arguments digest', () => {
  it('is v1: plus lowercase hex SHA-256 of the JCS form of {tool, arguments}', () => {
    const { digest, canonicalArguments } = canonicalCall('t', { b: 'é', a: 1.5e3 });
    expect(canonicalArguments).toBe('{"a":1500,"b":"é"}');
    const expected = createHash('sha256')
      .update('{"arguments":{"a":1500,"b":"é"},"tool":"t"}', 'utf8')
      .digest('hex');
    expect(digest).toBe(`v1:${expected}`);
  });

  it("is RFC 8785's canonical form on the RFC's own examples: numbers, string escapes, literals", () => {
    const text = String.raw`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`;
    expect(canonicalCall('t', parseIJson(text, limits)).canonicalArguments).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it("sorts keys by UTF-16 code units, as RFC 8785's example does", () => {
    const text = String.raw`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`;
    const { canonicalArguments } = canonicalCall('t', parseIJson(text, limits));
    // Read in text order: JSON.parse would move the integer-like key "1" first.
    const values = [...canonicalArguments.matchAll(/":"([^"]+)"/g)].map((m) => m[1]);
    expect(values).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  it('key order and whitespace in arguments do not change the digest', () => {
    const a = parseIJson('{"b": [1, 2, {"y": 1, "x": 2}], "a": "s"}', limits);
    const b = parseIJson('{"a":"s","b":[1,2,{"x":2,"y":1}]}', limits);
    expect(canonicalCall('tool.x', a).digest).toBe(canonicalCall('tool.x', b).digest);
  });

  it('a different tool name changes the digest', () => {
    expect(canonicalCall('webhook.post', { a: 1 }).digest).not.toBe(
      canonicalCall('webhook.post.v2', { a: 1 }).digest,
    );
  });

  const iJsonValue = fc
    .jsonValue({ maxDepth: 8 })
    .map((v) => JSON.parse(JSON.stringify(v)) as unknown)
    .filter((v) => !/"(__proto__|constructor|prototype)":/.test(JSON.stringify(v)));

  test.prop([iJsonValue])('any JSON value: a permutation of keys never changes the digest', (value) => {
    const shuffled = JSON.parse(JSON.stringify(value, (_k, v) => reverseKeys(v)));
    const args = { v: value };
    expect(canonicalCall('t', { v: shuffled }).digest).toBe(canonicalCall('t', args).digest);
  });

  it('refuses arguments over 64 KiB canonical', () => {
    expect(() => canonicalCall('t', { s: 'x'.repeat(MAX_CANONICAL_ARGUMENTS_BYTES) })).toThrow(
      PayloadTooLargeError,
    );
  });

  it('refuses arguments deeper than 32 levels', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 33; i++) deep = { d: deep };
    expect(() => canonicalCall('t', deep)).toThrow(ValidationError);
    let ok: unknown = 1;
    for (let i = 0; i < 32; i++) ok = { d: ok };
    expect(() => canonicalCall('t', ok)).not.toThrow();
  });
});

describe('I-JSON parsing', () => {
  it.each([
    ['duplicate keys', '{"a":1,"a":2}'],
    ['nested duplicate keys', '{"x":{"a":1,"b":{},"a":2}}'],
    ['escaped duplicate keys', '{"a":1,"\\u0061":2}'],
    ['lone surrogate', '{"a":"\\ud800"}'],
    ['-0', '{"a":-0}'],
    ['overflow to infinity', '{"a":1e999}'],
    ['__proto__ key', '{"__proto__":{"polluted":true}}'],
    ['constructor key', '{"a":{"constructor":{}}}'],
    ['not JSON', '{"a":'],
    ['trailing garbage', '{"a":1} x'],
  ])('refuses %s', (_name, text) => {
    expect(() => parseIJson(text, limits)).toThrow(ValidationError);
  });

  it('refuses hostile nesting without overflowing the stack', () => {
    const text = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(() => parseIJson(text, limits)).toThrow(ValidationError);
  });

  it('refuses bodies over the byte limit', () => {
    expect(() => parseIJson(`"${'x'.repeat(300_000)}"`, limits)).toThrow(PayloadTooLargeError);
  });

  it('accepts the same key in sibling objects and strings containing braces', () => {
    expect(parseIJson('[{"a":1},{"a":"}{,\\""}]', limits)).toEqual([{ a: 1 }, { a: '}{,"' }]);
  });
});

describe('downstream key', () => {
  test.prop([
    fc.string({ minLength: 1, maxLength: 64 }),
    fc.string({ minLength: 1, maxLength: 255 }),
    fc.uuid(),
  ])(
    'is at most 64 characters of [A-Za-z0-9_-] and the same for every attempt of one reservation',
    (tenant, id, reservation) => {
      const key = downstreamKey(tenant, id, reservation);
      expect(key).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(downstreamKey(tenant, id, reservation)).toBe(key);
    },
  );

  it('differs between tenants with the same operation ID', () => {
    expect(downstreamKey('a', 'op', 'r1')).not.toBe(downstreamKey('b', 'op', 'r1'));
  });

  it('differs for a new reservation of the same operation ID (a key reused after expiry)', () => {
    expect(downstreamKey('a', 'op', 'r1')).not.toBe(downstreamKey('a', 'op', 'r2'));
  });

  it('cannot be made to collide by moving characters between the parts', () => {
    expect(downstreamKey('a', 'b\u0000c', 'r')).not.toBe(downstreamKey('a\u0000b', 'c', 'r'));
    expect(downstreamKey('ab', 'c', 'r')).not.toBe(downstreamKey('a', 'bc', 'r'));
  });

  it('refuses to derive a key without a reservation', () => {
    expect(() => downstreamKey('a', 'op', '')).toThrow();
  });
});

function reverseKeys(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    return Object.fromEntries(Object.entries(v).reverse());
  }
  return v;
}
