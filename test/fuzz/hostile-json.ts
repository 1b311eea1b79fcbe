import fc from 'fast-check';

/**
 * Generators of JSON text for the fuzz suites: valid JSON trees (unicode and control characters in
 * keys and strings, numbers at the edges of doubles), and the same trees written out with exactly one
 * defect planted at a chosen node, at any depth. A defect is something the API must refuse: a
 * duplicate key, a prototype-machinery key, a number I-JSON forbids, a raw control character, a lone
 * surrogate, or broken syntax.
 */

/** A JSON value as JSON.parse would return it (plain objects, arrays, strings, finite numbers). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keys that name prototype machinery; valid trees never contain them, defects plant them. */
export const FORBIDDEN_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/**
 * Number tokens that are not I-JSON numbers, or not JSON at all. `-0` and overflow to Infinity are
 * valid JSON text that I-JSON refuses; the others are syntax errors. (Underflow such as `1e-400`
 * reads as 0 and is valid; it is not listed.)
 */
export const BAD_NUMBERS = [
  'NaN',
  '-NaN',
  'Infinity',
  '-Infinity',
  '+1',
  '1e999',
  '-1e999',
  '1E400',
  '1234567890e300',
  '-0',
  '-0.0',
  '-0e0',
  '-0.0e-5',
  '-1e-400',
  '0x1F',
  '0X1f',
  '01',
  '00',
  '-01',
  '1.',
  '.5',
  '1e',
  '1e+',
  '--1',
  '1_000',
  '0b1',
  '0o7',
  '1n',
  '١',
  '∞',
  'undefined',
  'True',
  'NULL',
] as const;

/** Syntax defects placed after a container's last member, or around it. */
const SYNTAX_DEFECTS = [
  'trailing_comma',
  'missing_colon',
  'single_quotes',
  'comment',
  'unclosed',
  'extra_close',
  'bare_word',
] as const;

/** One defect, planted at the `at`-th container node (objects and arrays, depth-first, modulo). */
export type Defect =
  | { kind: 'duplicate_key'; escaped: boolean }
  | { kind: 'forbidden_key'; key: string; escaped: boolean }
  | { kind: 'bad_number'; token: string }
  | { kind: 'raw_control'; code: number }
  | { kind: 'lone_surrogate'; raw: boolean; unit: number }
  | { kind: 'syntax'; which: (typeof SYNTAX_DEFECTS)[number] };

/** A key for valid trees: any code points (control characters included), never prototype machinery. */
export const keyArb: fc.Arbitrary<string> = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.string({ unit: 'grapheme', maxLength: 4 }),
    fc.constantFrom('', ' ', '\u0000', '\r\n', '"', '\\', '\u2028', '\ufeff', 'a.b', '$ref', 'toString'),
  )
  .filter((key) => !(FORBIDDEN_KEYS as readonly string[]).includes(key));

/** A finite double that is not -0 (I-JSON), including subnormals and the extremes. */
const numberArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
  fc.constantFrom(0, Number.MAX_VALUE, Number.MIN_VALUE, -Number.MAX_VALUE, 2 ** 53, -(2 ** 53) - 2),
);

/** A string value: any code points (controls, NUL, BOM, line separators), never a lone surrogate. */
const stringArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.constantFrom('\u0000', '\u001f', '\u007f', '\ud83d\ude00', '\u2028\u2029', '</script>', '%00'),
);

/** A valid I-JSON tree of bounded depth and width. */
export function jsonTreeArb(maxDepth = 4): fc.Arbitrary<Json> {
  const { tree } = fc.letrec<{ tree: Json }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', maxDepth },
      fc.constant(null),
      fc.boolean(),
      numberArb,
      stringArb,
      fc.array(tie('tree'), { maxLength: 4 }),
      fc.dictionary(keyArb, tie('tree'), { maxKeys: 4 }),
    ),
  }));
  return tree;
}

/** A defect to plant. */
export const defectArb: fc.Arbitrary<Defect> = fc.oneof(
  fc.record({ kind: fc.constant('duplicate_key' as const), escaped: fc.boolean() }),
  fc.record({
    kind: fc.constant('forbidden_key' as const),
    key: fc.constantFrom(...FORBIDDEN_KEYS),
    escaped: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('bad_number' as const), token: fc.constantFrom(...BAD_NUMBERS) }),
  fc.record({
    kind: fc.constant('raw_control' as const),
    code: fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.constant(0)),
  }),
  fc.record({
    kind: fc.constant('lone_surrogate' as const),
    raw: fc.boolean(),
    unit: fc.oneof(fc.integer({ min: 0xd800, max: 0xdbff }), fc.integer({ min: 0xdc00, max: 0xdfff })),
  }),
  fc.record({ kind: fc.constant('syntax' as const), which: fc.constantFrom(...SYNTAX_DEFECTS) }),
);

/** Every UTF-16 unit as `\uXXXX`: the same key, spelled so that only a real JSON parser sees it. */
export function escapeAll(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) out += `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return `"${out}"`;
}

/** A member (object) or element (array) text that carries the defect, if the defect is one. */
function defectMember(defect: Defect, inObject: boolean, firstKey: string | undefined): string | undefined {
  const member = (key: string, value: string) => (inObject ? `${key}:${value}` : `{${key}:${value}}`);
  switch (defect.kind) {
    case 'duplicate_key': {
      const key = firstKey ?? 'dup';
      const again = defect.escaped ? escapeAll(key) : JSON.stringify(key);
      // In an object that had no key, the key is written twice; in an array, a small object does it.
      const first = firstKey === undefined || !inObject ? `${JSON.stringify(key)}:1,` : '';
      return inObject ? `${first}${again}:2` : `{${JSON.stringify(key)}:1,${again}:2}`;
    }
    case 'forbidden_key':
      return member(defect.escaped ? escapeAll(defect.key) : JSON.stringify(defect.key), '{"polluted":true}');
    case 'bad_number':
      return inObject ? `"n":${defect.token}` : defect.token;
    case 'raw_control':
      return member('"s"', `"a${String.fromCharCode(defect.code)}b"`);
    case 'lone_surrogate': {
      const text = defect.raw
        ? `"a${String.fromCharCode(defect.unit)}b"`
        : `"a\\u${defect.unit.toString(16)}b"`;
      return member('"s"', text);
    }
    case 'syntax':
      return undefined;
  }
}

/** Wraps a container's text with a syntax defect. */
function syntaxDefect(which: (typeof SYNTAX_DEFECTS)[number], open: string, members: string[]): string {
  const close = open === '{' ? '}' : ']';
  const inObject = open === '{';
  switch (which) {
    case 'trailing_comma':
      return `${open}${members.join(',')},${close}`;
    case 'missing_colon':
      return inObject ? `{${[...members, '"k" 1'].join(',')}}` : `[${[...members, '{"k" 1}'].join(',')}]`;
    case 'single_quotes':
      return inObject ? `{${[...members, "'k':1"].join(',')}}` : `[${[...members, "'v'"].join(',')}]`;
    case 'comment':
      return `${open}/* c */${members.join(',')}${close}`;
    case 'unclosed':
      return `${open}${members.join(',')}`;
    case 'extra_close':
      return `${open}${members.join(',')}${close}${close}`;
    case 'bare_word':
      return inObject ? `{${[...members, 'k:1'].join(',')}}` : `[${[...members, 'k'].join(',')}]`;
  }
}

/** How many containers (objects and arrays) a tree has: the places a defect can go. */
export function containerCount(value: Json): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((sum, child) => sum + containerCount(child), 0);
}

/**
 * Writes `value` as JSON text, planting `defect` at container number `at` (depth-first, counted
 * from 0, modulo the number of containers). Without a defect the text is exactly `JSON.stringify`'s.
 * Valid members are kept, so the defect is the only thing wrong with the text.
 *
 * @example
 * ```ts
 * writeJson({ a: { b: 1 } }, { kind: 'duplicate_key', escaped: true }, 1); // '{"a":{"b":1,"\\u0062":2}}'
 * ```
 */
export function writeJson(value: Json, defect?: Defect, at = 0): string {
  const count = containerCount(value);
  const target = count === 0 ? -1 : at % count;
  let index = 0;
  const write = (node: Json): string => {
    if (node === null || typeof node !== 'object') return JSON.stringify(node);
    const mine = index++;
    const isArray = Array.isArray(node);
    const members = isArray
      ? node.map((child) => write(child))
      : Object.entries(node).map(([key, child]) => `${JSON.stringify(key)}:${write(child)}`);
    const open = isArray ? '[' : '{';
    const close = isArray ? ']' : '}';
    if (defect === undefined || mine !== target) return `${open}${members.join(',')}${close}`;
    if (defect.kind === 'syntax') return syntaxDefect(defect.which, open, members);
    const firstKey = isArray ? undefined : Object.keys(node)[0];
    const extra = defectMember(defect, !isArray, firstKey) as string;
    return `${open}${[...members, extra].join(',')}${close}`;
  };
  if (target === -1 && defect !== undefined) throw new Error('a defect needs an object or an array');
  return write(value);
}

/** One byte sequence that is not UTF-8 (overlong, surrogate, beyond U+10FFFF, cut short, stray). */
export const NON_UTF8: readonly number[][] = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x80],
  [0xe2, 0x82],
  [0xc3],
];
