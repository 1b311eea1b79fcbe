import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { OperationPosition } from '../../client/index';
import {
  assertOperationId,
  formatIdempotencyKey,
  InvalidOperationIdError,
  operationIdFor,
  operationIdFrom,
} from '../../client/index';

const VALID = /^[\x21-\x7e]{1,255}$/;

const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 300 });
const position: fc.Arbitrary<OperationPosition> = fc.record(
  {
    agentRunId: text,
    step: fc.oneof(fc.nat(), text),
    callIndex: fc.nat({ max: 1000 }),
    scope: text,
  },
  { requiredKeys: ['agentRunId', 'step', 'callIndex'] },
);

/** Few characters, chosen to collide if the encoding were ambiguous (separators, escapes, digits). */
const tricky = fc.string({
  unit: fc.constantFrom('a', ':', '%', '3', 'A', 's', 'c', '~', 'é', ' '),
  minLength: 1,
  maxLength: 6,
});
const trickyPosition: fc.Arbitrary<OperationPosition> = fc.record(
  {
    agentRunId: fc.oneof(
      tricky,
      fc.string({ unit: fc.constantFrom('r', ':'), minLength: 250, maxLength: 260 }),
    ),
    step: fc.oneof(fc.nat({ max: 40 }), tricky),
    callIndex: fc.nat({ max: 40 }),
    scope: tricky,
  },
  { requiredKeys: ['agentRunId', 'step', 'callIndex'] },
);

/** The step as operationIdFor understands it: a number and its decimal string are the same step. */
function normalize(p: OperationPosition): string {
  return JSON.stringify([p.scope ?? null, p.agentRunId, String(p.step), p.callIndex]);
}

describe('operationIdFor', () => {
  it('has a frozen, readable format', () => {
    expect(operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 })).toBe('run-42:s3:c0');
    expect(operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 1 })).toBe('run-42:s3:c1');
    expect(operationIdFor({ agentRunId: 'run 42', step: 'plan', callIndex: 0, scope: 'a' })).toBe(
      'a:run%2042:splan:c0',
    );
  });

  test.prop([position])(
    'is the same every time for the same position (a regenerated response keeps its IDs)',
    (p) => {
      expect(operationIdFor({ ...p })).toBe(operationIdFor(structuredClone(p)));
    },
  );

  test.prop([position])('is always a valid operation ID: 1 to 255 characters from 0x21 to 0x7E', (p) => {
    const id = operationIdFor(p);
    expect(id).toMatch(VALID);
    expect(() => assertOperationId(id)).not.toThrow();
  });

  test.prop([trickyPosition, trickyPosition], { numRuns: 2000 })(
    'gives different positions different IDs',
    (a, b) => {
      fc.pre(normalize(a) !== normalize(b));
      expect(operationIdFor(a)).not.toBe(operationIdFor(b));
    },
  );

  test.prop([trickyPosition])('can be read back into its position, so no two positions share an ID', (p) => {
    const id = operationIdFor(p);
    fc.pre(id.endsWith(`:c${p.callIndex}`)); // shortened IDs are checked by the pairwise property
    const parts = id.split(':');
    const callIndex = Number(parts.pop()!.slice(1));
    const step = decodeURIComponent(parts.pop()!.slice(1));
    const agentRunId = decodeURIComponent(parts.pop()!);
    const scope = parts.length === 0 ? undefined : decodeURIComponent(parts.join(':'));
    expect(normalize({ agentRunId, step, callIndex, ...(scope === undefined ? {} : { scope }) })).toBe(
      normalize(p),
    );
  });

  test.prop([text, fc.oneof(fc.nat(), text), fc.integer({ min: 2, max: 64 })])(
    'gives every parallel call of one response its own ID',
    (agentRunId, step, calls) => {
      const ids = Array.from({ length: calls }, (_, callIndex) =>
        operationIdFor({ agentRunId, step, callIndex }),
      );
      expect(new Set(ids).size).toBe(calls);
    },
  );

  it('does not confuse a scope with a colon inside the run ID', () => {
    const scoped = operationIdFor({ scope: 'a', agentRunId: 'b', step: 1, callIndex: 0 });
    const unscoped = operationIdFor({ agentRunId: 'a:b', step: 1, callIndex: 0 });
    expect(scoped).toBe('a:b:s1:c0');
    expect(unscoped).toBe('a%3Ab:s1:c0');
  });

  it('shortens long positions to a readable prefix and a hash, still distinct', () => {
    const long = 'r'.repeat(400);
    const a = operationIdFor({ agentRunId: long, step: 1, callIndex: 0 });
    const b = operationIdFor({ agentRunId: long, step: 1, callIndex: 1 });
    expect(a.length).toBeLessThanOrEqual(255);
    expect(a.startsWith('r'.repeat(180))).toBe(true);
    expect(a).toMatch(/~[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });

  it('refuses positions that cannot name an action', () => {
    expect(() => operationIdFor({ agentRunId: '', step: 1, callIndex: 0 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r', step: -1, callIndex: 0 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r', step: 1.5, callIndex: 0 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r', step: '', callIndex: 0 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r', step: 1, callIndex: -1 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r\ud800', step: 1, callIndex: 0 })).toThrow(TypeError);
    expect(() => operationIdFor({ agentRunId: 'r', step: 1, callIndex: 0, scope: '' })).toThrow(TypeError);
  });
});

describe('operationIdFrom', () => {
  const parts = fc.array(fc.oneof(fc.nat({ max: 40 }), tricky), { minLength: 2, maxLength: 5 });
  const same = (p: readonly (string | number)[]) => JSON.stringify(p.map(String));

  it('has a frozen, readable format', () => {
    expect(operationIdFrom(['exec-7f3a', 'charge-card'])).toBe('exec-7f3a/charge-card');
    expect(operationIdFrom(['arn:aws:lambda:eu-west-1:1:fn', 3])).toBe(
      'arn%3Aaws%3Alambda%3Aeu-west-1%3A1%3Afn/3',
    );
  });

  test.prop([parts, parts], { numRuns: 2000 })('gives different part lists different IDs', (a, b) => {
    fc.pre(same(a) !== same(b));
    expect(operationIdFrom(a)).not.toBe(operationIdFrom(b));
  });

  test.prop([fc.array(fc.oneof(fc.nat(), text), { minLength: 2, maxLength: 4 })])(
    'is always a valid operation ID, the same every time',
    (p) => {
      const id = operationIdFrom(p);
      expect(id).toMatch(VALID);
      expect(operationIdFrom(structuredClone(p))).toBe(id);
    },
  );

  test.prop([trickyPosition, parts])('never equals an operationIdFor ID', (position, p) => {
    expect(operationIdFrom(p)).not.toBe(operationIdFor(position));
  });

  it('shortens long positions to a readable prefix and a hash, still distinct', () => {
    const long = 'w'.repeat(300);
    const a = operationIdFrom([long, 'a']);
    const b = operationIdFrom([long, 'b']);
    expect(a).toMatch(/^w{180}~[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });

  it('refuses positions that cannot name an action', () => {
    expect(() => operationIdFrom(['only-one'])).toThrow(TypeError);
    expect(() => operationIdFrom(['run', ''])).toThrow(TypeError);
    expect(() => operationIdFrom(['run', -1])).toThrow(TypeError);
    expect(() => operationIdFrom(['run', 1.5])).toThrow(TypeError);
    expect(() => operationIdFrom(['run', '\ud800'])).toThrow(/lone surrogate/);
  });
});

describe('formatIdempotencyKey', () => {
  it('writes an RFC 8941 sf-string, escaping quotes and backslashes', () => {
    expect(formatIdempotencyKey('run-42:s3:c0')).toBe('"run-42:s3:c0"');
    expect(formatIdempotencyKey('a"b\\c')).toBe('"a\\"b\\\\c"');
  });

  it('refuses IDs the server would refuse', () => {
    expect(() => formatIdempotencyKey('a b')).toThrow(InvalidOperationIdError);
  });
});
