import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../functions/http/request';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { captureOutput, type TestApi, type TestRequest, testApi } from './support';

const db = useDynalite();
let tool: ScriptedTool;
let api: TestApi;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  api = await testApi(db.client, [tool.tool]);
});

function post(body: unknown, extra: Partial<TestRequest> = {}): TestRequest {
  return { method: 'POST', path: '/v1/operations', key: 'op-1', body, ...extra };
}

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { n: value };
  return value;
}

/** A body of exactly `bytes` bytes that is otherwise valid. */
function paddedBody(bytes: number): string {
  const json = JSON.stringify({ tool: 'test.effect', arguments: { target: 'a' } });
  return json + ' '.repeat(bytes - Buffer.byteLength(json));
}

const cases: [string, TestRequest, number, string][] = [
  ['malformed JSON', post('{"tool": "test.effect", '), 400, 'validation_failed'],
  ['an empty body', post(''), 400, 'validation_failed'],
  ['a JSON string instead of an object', post('"hello"'), 400, 'validation_failed'],
  [
    'an array instead of an object',
    post([{ tool: 'test.effect', arguments: { target: 'a' } }]),
    400,
    'validation_failed',
  ],
  ['null', post('null'), 400, 'validation_failed'],
  [
    'arguments as an array',
    post({ tool: 'test.effect', arguments: [{ target: 'a' }] }),
    400,
    'validation_failed',
  ],
  [
    'arguments as a string',
    post({ tool: 'test.effect', arguments: '{"target":"a"}' }),
    400,
    'validation_failed',
  ],
  ['tool as a number', post({ tool: 7, arguments: { target: 'a' } }), 400, 'validation_failed'],
  [
    'a tenant in the body',
    post({ tool: 'test.effect', arguments: { target: 'a' }, tenant: 'other' }),
    400,
    'validation_failed',
  ],
  [
    'agent_run_id of 256 characters',
    post({ tool: 'test.effect', arguments: { target: 'a' }, agent_run_id: 'r'.repeat(256) }),
    400,
    'validation_failed',
  ],
  [
    'agent_run_id with a newline',
    post({ tool: 'test.effect', arguments: { target: 'a' }, agent_run_id: 'a\nb' }),
    400,
    'validation_failed',
  ],
  [
    'arguments nested 40 levels',
    post({ tool: 'test.effect', arguments: { target: 'a', value: nested(40) } }),
    400,
    'validation_failed',
  ],
  [
    'hostile nesting (100 000 brackets)',
    post(`{"tool":"test.effect","arguments":${'['.repeat(100_000)}`),
    400,
    'validation_failed',
  ],
  [
    '__proto__ at the top',
    post('{"__proto__":{"admin":true},"tool":"test.effect","arguments":{"target":"a"}}'),
    400,
    'validation_failed',
  ],
  [
    '__proto__ inside arguments',
    post('{"tool":"test.effect","arguments":{"target":"a","value":{"__proto__":{"x":1}}}}'),
    400,
    'validation_failed',
  ],
  [
    'a constructor key',
    post('{"tool":"test.effect","arguments":{"target":"a","value":{"constructor":{"prototype":1}}}}'),
    400,
    'validation_failed',
  ],
  [
    'duplicate keys at the top',
    post('{"tool":"test.effect","tool":"test.effect","arguments":{"target":"a"}}'),
    400,
    'validation_failed',
  ],
  [
    'duplicate keys in arguments',
    post('{"tool":"test.effect","arguments":{"target":"a","target":"b"}}'),
    400,
    'validation_failed',
  ],
  [
    'a number too large for a double',
    post('{"tool":"test.effect","arguments":{"target":"a","value":1e999}}'),
    400,
    'validation_failed',
  ],
  ['-0', post('{"tool":"test.effect","arguments":{"target":"a","value":-0}}'), 400, 'validation_failed'],
  [
    'a lone surrogate escape',
    post('{"tool":"test.effect","arguments":{"target":"\\ud800"}}'),
    400,
    'validation_failed',
  ],
  [
    'a lone surrogate in a text body',
    post('{"tool":"test.effect","arguments":{"target":"\ud800"}}'),
    400,
    'validation_failed',
  ],
  [
    'a byte-order mark',
    post('\ufeff{"tool":"test.effect","arguments":{"target":"a"}}'),
    400,
    'validation_failed',
  ],
  [
    'non-UTF-8 bytes (base64 body)',
    post(undefined, { base64: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) }),
    400,
    'validation_failed',
  ],
  [
    'an overlong UTF-8 encoding',
    post(undefined, { base64: Buffer.from('{"tool":"\xc0\xaf"}', 'latin1') }),
    400,
    'validation_failed',
  ],
  ['invalid base64', post(undefined, { base64Raw: '!!!not base64!!!' }), 400, 'validation_failed'],
  ['base64 with a bad length', post(undefined, { base64Raw: 'eyJ9' + 'a' }), 400, 'validation_failed'],
  ['a body one byte over 256 KiB', post(paddedBody(MAX_BODY_BYTES + 1)), 413, 'payload_too_large'],
  [
    'a base64 body one byte over 256 KiB',
    post(paddedBody(MAX_BODY_BYTES + 1), { base64: true }),
    413,
    'payload_too_large',
  ],
  ['a 5 MiB body', post('x'.repeat(5 * 1024 * 1024)), 413, 'payload_too_large'],
  [
    'text/plain',
    post({ tool: 'test.effect', arguments: { target: 'a' } }, { contentType: 'text/plain' }),
    415,
    'unsupported_media_type',
  ],
  [
    'no Content-Type',
    post({ tool: 'test.effect', arguments: { target: 'a' } }, { contentType: null }),
    415,
    'unsupported_media_type',
  ],
  [
    'a form body',
    post('tool=test.effect', { contentType: 'application/x-www-form-urlencoded' }),
    415,
    'unsupported_media_type',
  ],
  [
    'charset latin1',
    post(
      { tool: 'test.effect', arguments: { target: 'a' } },
      { contentType: 'application/json; charset=iso-8859-1' },
    ),
    415,
    'unsupported_media_type',
  ],
  [
    'an unknown media type parameter',
    post({ tool: 'test.effect', arguments: { target: 'a' } }, { contentType: 'application/json; profile=x' }),
    415,
    'unsupported_media_type',
  ],
  [
    'application/jsonx',
    post({ tool: 'test.effect', arguments: { target: 'a' } }, { contentType: 'application/jsonx' }),
    415,
    'unsupported_media_type',
  ],
  [
    'two Content-Type headers',
    post(
      { tool: 'test.effect', arguments: { target: 'a' } },
      { headers: [['Content-Type', 'application/json']] },
    ),
    415,
    'unsupported_media_type',
  ],
];

describe('hostile bodies: a 4xx problem with a stable code, no record, nothing run', () => {
  it.each(cases)('%s → %i %s', async (_name, request, status, code) => {
    const res = await api.call(request);
    expect(res.status).toBe(status);
    expect(res.headers['Content-Type']).toBe('application/problem+json');
    expect(res.body.code).toBe(code);
    expect(await api.recordCount()).toBe(0);
    expect(tool.starts).toHaveLength(0);
  });

  it('fixing the request afterwards with the same key works: nothing was consumed', async () => {
    for (const [, request] of cases) await api.call(request);
    const ok = await api.call(post({ tool: 'test.effect', arguments: { target: 'a' } }));
    expect(ok.status).toBe(201);
    expect(tool.effects).toHaveLength(1);
  });

  it('a body of exactly 256 KiB is accepted, as plain text and as base64', async () => {
    const body = paddedBody(MAX_BODY_BYTES);
    expect((await api.call(post(body, { key: 'op-plain' }))).status).toBe(201);
    expect((await api.call(post(body, { key: 'op-b64', base64: true }))).status).toBe(201);
  });

  it('application/json with charset=utf-8 in any case or quoting is accepted', async () => {
    for (const [i, contentType] of [
      'application/json; charset=utf-8',
      'Application/JSON;Charset="UTF-8"',
      'application/json ;',
    ].entries()) {
      const res = await api.call(
        post({ tool: 'test.effect', arguments: { target: 'a' } }, { key: `ct-${i}`, contentType }),
      );
      expect(res.status).toBe(201);
    }
  });

  it('valid UTF-8 beyond ASCII in a base64 body is accepted', async () => {
    const res = await api.call(
      post({ tool: 'test.effect', arguments: { target: 'héllo ✓ 😀' } }, { base64: true }),
    );
    expect(res.status).toBe(201);
    expect(res.body.result).toMatchObject({ target: 'héllo ✓ 😀' });
  });

  it('argument values never reach a log line or an error body', async () => {
    const canary = 'canary-7f3a';
    const { lines } = await captureOutput(async () => {
      await api.call(post({ tool: 'test.effect', arguments: { target: canary } }, { key: 'op-log' }));
      await api.call(
        post({ tool: 'test.effect', arguments: { target: canary, [canary]: canary } }, { key: 'op-log2' }),
      );
      const bad = await api.call(
        post({ tool: 'test.effect', arguments: { target: 1, value: canary } }, { key: 'op-log3' }),
      );
      expect(bad.raw.body).not.toContain(canary);
    });
    expect(lines.join('')).not.toContain(canary);
  });
});

/** Idempotency-Key values: valid, invalid and hostile. */
const keyArb = fc.oneof(
  fc.stringMatching(/^[\x21-\x7e]{1,20}$/),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('', ' ', '"a", "b"', '"unterminated', 'a\r\nX: y', 'k'.repeat(256), '"\\x"'),
);

const contentTypeArb = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/json; charset=utf-16',
  '',
  null,
);

/** Bodies: valid calls, valid JSON of the wrong shape, and arbitrary text. */
const bodyArb = fc.oneof(
  fc.record({
    tool: fc.constant('test.effect'),
    arguments: fc.record({ target: fc.string({ maxLength: 10 }) }),
  }),
  fc.record({ tool: fc.string({ maxLength: 12 }), arguments: fc.jsonValue({ maxDepth: 3 }) }),
  fc.record(
    {
      tool: fc.constantFrom('test.effect', 'x'),
      arguments: fc.object({ maxDepth: 3 }),
      agent_run_id: fc.string(),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue({ maxDepth: 4 }),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
);

const methodPathArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(['POST', '/v1/operations'] as const) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD'),
      fc.constantFrom(
        '/v1/operations/x',
        '/v1/operations/x/approval',
        '/v1/operations/x/resolution',
        '/v1/tools',
        '/v1',
        '/v1/operations/%ZZ',
      ),
    ),
  },
);

describe('property: arbitrary requests', () => {
  it('never produce a 5xx, always produce JSON, and create a record only when the call was valid', async () => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(
        methodPathArb,
        keyArb,
        contentTypeArb,
        bodyArb,
        fc.boolean(),
        fc.constantFrom('agent-a', 'operator-a', 'approver-b', null, 'nope'),
        async ([method, path], key, contentType, body, base64, token) => {
          const before = await api.recordCount();
          const res = await api.call({ method, path, key, contentType, body, base64, token });
          expect(res.status).toBeLessThan(500);
          expect(res.headers['Cache-Control']).toBe('no-store');
          const after = await api.recordCount();
          if (res.status >= 400) {
            expect(res.headers['Content-Type']).toBe('application/problem+json');
            expect(typeof res.body.code).toBe('string');
            expect(after).toBe(before);
          } else if (after > before) {
            created += 1;
            expect(token).toBe('agent-a');
            expect([method, path]).toEqual(['POST', '/v1/operations']);
            expect([201, 202, 503]).toContain(res.status);
            expect(after).toBe(before + 1);
          }
        },
      ),
      {
        numRuns: 300,
        // Valid calls, always tried besides the random ones, so the valid path is reached every run.
        examples: [
          [
            ['POST', '/v1/operations'],
            'valid-1',
            'application/json',
            { tool: 'test.effect', arguments: { target: 'a' } },
            false,
            'agent-a',
          ],
          [
            ['POST', '/v1/operations'],
            '"valid-2"',
            'application/json; charset=utf-8',
            { tool: 'test.effect', arguments: { target: 'b' } },
            true,
            'agent-a',
          ],
        ],
      },
    );
    // The generators must reach the valid path too, or "no record unless valid" proves nothing.
    expect(created).toBeGreaterThan(0);
  });
});
