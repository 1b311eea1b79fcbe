import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ErrorCode } from '../../functions/domain/errors';
import { captureOutput } from '../http/support';
import {
  callRaw,
  errorLines,
  expectRefusal,
  expectSafeHeaders,
  FUZZ_TEST_TIMEOUT_MS,
  type FuzzApi,
  type RawRequest,
  runs,
  startFuzzApi,
} from './fuzz-api';

/**
 * Bad-input fuzzing of everything around the body: the Idempotency-Key header, operation IDs in the
 * path, header injection (CR/LF, NUL, huge and repeated headers, headers named like prototype
 * machinery), and query-string abuse of the listing route. Events are built as the Lambda runtime
 * delivers them (JSON-parsed), in every shape API Gateway or local mode may produce.
 */

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

let fuzz: FuzzApi;

beforeAll(async () => {
  fuzz = await startFuzzApi();
});
afterAll(async () => {
  await fuzz?.stop();
});
beforeEach(async () => {
  await fuzz.freshTable();
});

const BODY = JSON.stringify({ tool: 'test.effect', arguments: { target: 't' } });

let counter = 0;
function fresh(prefix = 'h'): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A valid submission; `headers` replace or add to the defaults. */
function submission(headers: [string, string][], extra: Partial<RawRequest> = {}): RawRequest {
  return { method: 'POST', path: '/v1/operations', headers, body: BODY, ...extra };
}

async function withoutErrors(check: () => Promise<void>): Promise<void> {
  const { lines } = await captureOutput(check);
  expect(errorLines(lines)).toEqual([]);
}

/**
 * The operation ID an Idempotency-Key header list names, by SPEC §1 and RFC 8941: one occurrence,
 * an sf-string (escapes `\"` and `\\` only) or a bare token without a comma (a comma separates list
 * members), 1 to 255 characters 0x21–0x7E.
 * Written from the SPEC, independently of functions/domain/operation-id.ts.
 */
function expectedOperationId(values: readonly string[]): string | undefined {
  if (values.length !== 1) return undefined;
  const raw = (values[0] as string).trim();
  let id = raw;
  if (raw.startsWith('"')) {
    const match = /^"((?:[^"\\]|\\["\\])*)"$/.exec(raw);
    if (!match) return undefined;
    id = (match[1] as string).replace(/\\(["\\])/g, '$1');
  } else if (raw.includes(',')) {
    return undefined; // in a header, an unquoted comma separates two values
  }
  return /^[\x21-\x7e]{1,255}$/.test(id) ? id : undefined;
}

const keyValueArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,300}$/) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 2,
    arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((inner) => `"${inner}"`),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'a\r\nX-Injected: 1',
      'a\r\n\r\n{"tool":"x"}',
      'a\u0000b',
      '\u0000',
      'a\nb',
      ' a ',
      '\ta\t',
      'a, b',
      '"a", "b"',
      '"a",b',
      '""',
      '"',
      '"a\\"b"',
      '"a\\\\b"',
      '"a\\x"',
      '"a" ',
      '"a"b',
      'run/42?x=1#f',
      '%00',
      'ḱey',
      '\u00a0key',
      '\ufeffkey',
      'key\u2028',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 256, max: 70_000 }).map((n) => 'k'.repeat(n)) },
);

const keyNameArb = fc.constantFrom(
  'Idempotency-Key',
  'idempotency-key',
  'IDEMPOTENCY-KEY',
  'idempotency-Key',
);

describe('the Idempotency-Key header, generated', () => {
  it('names exactly the operation ID the SPEC says, or is 400 idempotency_key_missing/invalid with no record', async () => {
    const occurrences = fc.oneof(
      fc.array(fc.tuple(keyNameArb, keyValueArb), { minLength: 0, maxLength: 3 }),
      fc
        .tuple(keyNameArb, fc.stringMatching(/^[a-z0-9]{1,10}$/), fc.integer({ min: 2, max: 60 }))
        .map(([name, value, n]) => Array.from({ length: n }, () => [name, value] as [string, string])),
    );
    let accepted = 0;
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(occurrences, async (keys) => {
          const api = fuzz.api;
          const before = await api.recordCount();
          const headers: [string, string][] = [
            ['Authorization', 'Bearer agent-a'],
            ['Content-Type', 'application/json'],
            ...keys,
          ];
          const res = await callRaw(api, submission(headers));
          const expected = expectedOperationId(keys.map(([, value]) => value));
          if (expected === undefined) {
            const code = expectRefusal(res, ['idempotency_key_missing', 'idempotency_key_invalid']);
            if (keys.length === 0) expect(code).toBe('idempotency_key_missing');
            expect(await api.recordCount()).toBe(before);
          } else {
            expect([201, 202], JSON.stringify(res.body)).toContain(res.status);
            expect(res.body.operation_id).toBe(expected);
            expect(res.headers.Location).toBe(`/v1/operations/${encodeURIComponent(expected)}`);
            expectSafeHeaders(res);
            accepted += 1;
            // The ID round-trips through the Location it was given.
            const read = await callRaw(api, {
              method: 'GET',
              path: res.headers.Location as string,
              headers: [['Authorization', 'Bearer agent-a']],
            });
            expect(read.body.operation_id).toBe(expected);
          }
        }),
        { numRuns: runs(1.5) },
      );
    });
    expect(accepted).toBeGreaterThan(0);
  });
});

/** Percent-encodes every byte, valid UTF-8 or not. */
function percentBytes(bytes: Uint8Array): string {
  return [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
}

const segmentArb: fc.Arbitrary<string> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 12 }).map(percentBytes),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encodeURIComponent),
  fc
    .string({ unit: 'binary', minLength: 1, maxLength: 20 })
    .map((s) => s.replaceAll('/', ''))
    .filter((s) => s !== ''),
  fc.stringMatching(/^[\x21-\x7e]{1,300}$/).map((s) => s.replaceAll('/', '_')),
  fc.constantFrom(
    '%',
    '%zz',
    '%0',
    '%00',
    '%0d%0a',
    '%0D%0AX-Injected:%201',
    '%2F',
    '..',
    '.',
    '%2e%2e',
    'a%20b',
    '%25',
    '%C0%AF',
    '%ED%A0%80',
    '%F4%90%80%80',
    '%EF%BB%BFkey',
    'x'.repeat(10_000),
    '__proto__',
    'constructor',
  ),
);

describe('operation IDs in the path, generated', () => {
  it('every route decodes one segment once: 404 for a valid ID nobody used, else 400 idempotency_key_*, never a record', async () => {
    const route = fc.constantFrom('read', 'approval', 'resolution');
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(segmentArb, route, async (segment, which) => {
          const api = fuzz.api;
          let decoded: string | undefined;
          try {
            decoded = decodeURIComponent(segment);
          } catch {
            decoded = undefined;
          }
          const valid = decoded !== undefined && /^[\x21-\x7e]{1,255}$/.test(decoded);
          const request: RawRequest =
            which === 'read'
              ? { method: 'GET', path: `/v1/operations/${segment}` }
              : {
                  method: 'POST',
                  path: `/v1/operations/${segment}/${which}`,
                  body: JSON.stringify(
                    which === 'approval'
                      ? { decision: 'approve', arguments_digest: `v1:${'0'.repeat(64)}` }
                      : { outcome: 'failed', attempt: 1 },
                  ),
                };
          request.headers = [
            ['Authorization', 'Bearer all-a'],
            ['Content-Type', 'application/json'],
          ];
          const res = await callRaw(api, request);
          const codes: ErrorCode[] = valid
            ? ['not_found']
            : ['idempotency_key_invalid', 'idempotency_key_missing'];
          expectRefusal(res, codes);
          expect(await api.recordCount()).toBe(0);
        }),
        { numRuns: runs(1.5) },
      );
    });
  });
});

/** Header values an attacker would try: line breaks, NUL, huge, prototype names, non-ASCII. */
const hostileValueArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    'x\r\nX-Injected: 1',
    'x\r\n\r\nHTTP/1.1 200 OK',
    'x\u0000y',
    '\u0000',
    '\r',
    '\n',
    ' ',
    '',
    'é',
    '\u2028',
  ),
  fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'v'.repeat(n)),
);

const hostileNameArb: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'X-Forwarded-For',
    'Host',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }),
);

type Mutation =
  | { kind: 'authorization'; values: string[] }
  | { kind: 'content_type'; values: string[] }
  | { kind: 'prefer'; value: string }
  | { kind: 'extra'; headers: [string, string][] }
  | { kind: 'case'; upper: boolean };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('authorization' as const),
    values: fc.array(
      fc.oneof(
        hostileValueArb,
        fc.constantFrom(
          'Bearer agent-a',
          'bearer   agent-a  ',
          'Bearer agent-a\r\nX: y',
          'Bearer agent-a\u0000',
          'Bearer\tagent-a',
          'Basic YWdlbnQtYTo=',
          'Bearer agent-b',
          'Bearer  ',
          'Bearer agent-a, Bearer agent-b',
        ),
      ),
      { minLength: 0, maxLength: 3 },
    ),
  }),
  fc.record({
    kind: fc.constant('content_type' as const),
    values: fc.array(
      fc.oneof(
        hostileValueArb,
        fc.constantFrom(
          'application/json\r\nX: y',
          'application/json\u0000',
          'application/json; charset=utf-8; charset=utf-8',
          'application/json;charset',
          'application/json; charset="utf-8',
          'APPLICATION/JSON',
          'application/json ;',
        ),
      ),
      { minLength: 0, maxLength: 2 },
    ),
  }),
  fc.record({
    kind: fc.constant('prefer' as const),
    value: fc.oneof(hostileValueArb, fc.constant('respond-async')),
  }),
  fc.record({
    kind: fc.constant('extra' as const),
    headers: fc.array(fc.tuple(hostileNameArb, hostileValueArb), { minLength: 1, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('case' as const), upper: fc.boolean() }),
);

describe('header injection and abuse, generated', () => {
  it('never reaches a 5xx or a record it should not: only a valid single credential, content type and key get through', async () => {
    let created = 0;
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
          fc.constantFrom('both', 'single', 'multi', 'none'),
          fc.integer({ min: 0, max: 120 }),
          async (mutations, headerMaps, padding) => {
            const api = fuzz.api;
            let auth = ['Bearer agent-a'];
            let contentType = ['application/json'];
            const extra: [string, string][] = Array.from({ length: padding }, (_, i) => [`x-pad-${i}`, 'p']);
            let upper = false;
            for (const m of mutations) {
              if (m.kind === 'authorization') auth = m.values;
              else if (m.kind === 'content_type') contentType = m.values;
              else if (m.kind === 'prefer') extra.push(['Prefer', m.value]);
              else if (m.kind === 'extra') extra.push(...m.headers);
              else upper = m.upper;
            }
            const name = (n: string) => (upper ? n.toUpperCase() : n.toLowerCase());
            const key = fresh();
            // Extra headers never replace the three that matter (a map keeps one entry per name).
            const reserved = /^(authorization|content-type|idempotency-key)$/i;
            const headers: [string, string][] = [
              ...auth.map((v) => [name('Authorization'), v] as [string, string]),
              ...contentType.map((v) => [name('Content-Type'), v] as [string, string]),
              [name('Idempotency-Key'), key],
              ...extra.filter(([n]) => !reserved.test(n)),
            ];
            const before = await api.recordCount();
            const res = await callRaw(
              api,
              submission(headers, { headerMaps: headerMaps as RawRequest['headerMaps'] }),
            );
            expectSafeHeaders(res);
            // With one map, repeated names collapse to their last value, as API Gateway's `headers` does.
            const seen = (values: string[]) => (headerMaps === 'single' ? values.slice(-1) : values);
            const authOk =
              headerMaps !== 'none' &&
              seen(auth).length === 1 &&
              /^bearer +agent-[ab] *$/i.test(seen(auth)[0] as string);
            const typeOk =
              seen(contentType).length === 1 &&
              /^application\/json *(; *(charset *= *("utf-8"|utf-8))? *)*$/i.test(
                seen(contentType)[0] as string,
              );
            if (res.status < 300) {
              expect(authOk, `auth ${JSON.stringify(auth)}`).toBe(true);
              expect(typeOk, `content type ${JSON.stringify(contentType)}`).toBe(true);
              expect(res.body.operation_id).toBe(key);
              expect(await api.recordCount()).toBe(before + 1);
              created += 1;
            } else {
              const codes: ErrorCode[] = !authOk
                ? ['unauthenticated']
                : ['unsupported_media_type', 'idempotency_key_missing'];
              const code = expectRefusal(res, codes);
              if (code === 'idempotency_key_missing') expect(headerMaps).toBe('none');
              if (code === 'unauthenticated') expect(res.headers['WWW-Authenticate']).toBe('Bearer');
              expect(await api.recordCount()).toBe(before);
            }
          },
        ),
        { numRuns: runs(1.5) },
      );
    });
    expect(created).toBeGreaterThan(0);
  });
});

describe('query-string abuse on the listing route, generated', () => {
  /** Digests of tenant A's operations: a listed operation with any other digest would be a leak. */
  const ownDigests = new Set<string>();

  beforeEach(async () => {
    // Unresolved operations in both tenants, with the same IDs, so a leak would show.
    fuzz.effect.defaultBehaviour = { kind: 'uncertain', code: 'lost' };
    for (const token of ['agent-a', 'agent-b']) {
      for (const id of ['q-1', 'q-2', 'q-3']) {
        const headers: [string, string][] = [
          ['Authorization', `Bearer ${token}`],
          ['Content-Type', 'application/json'],
          ['Idempotency-Key', id],
        ];
        const body = JSON.stringify({ tool: 'test.effect', arguments: { target: `${token}-${id}` } });
        const res = await callRaw(fuzz.api, submission(headers, { body }));
        expect(res.body.state).toBe('uncertain');
        if (token === 'agent-a') ownDigests.add(res.body.arguments_digest as string);
      }
    }
    fuzz.effect.defaultBehaviour = { kind: 'succeed' };
  });

  const nameArb = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('state', 'limit', 'cursor') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'include',
        'State',
        'LIMIT',
        'limit[]',
        '',
        '__proto__',
        'constructor',
        'toString',
        'hasOwnProperty',
        'tenant',
      ),
    },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  );
  const valueArb = fc.oneof(
    fc.constantFrom(
      '1',
      '2',
      '100',
      '101',
      '0',
      '-1',
      '1.0',
      '1.5',
      '1e1',
      '0x10',
      ' 5',
      '5 ',
      'Infinity',
      'NaN',
      '',
      '٣',
      '5\u0000',
      '9007199254740993',
    ),
    fc.constantFrom(
      'uncertain',
      'needs_reconciliation',
      'queued',
      'succeeded',
      'UNCERTAIN',
      'uncertain ',
      '*',
    ),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.string({ maxLength: 40 }).map((s) => Buffer.from(s).toString('base64url')),
    fc.integer({ min: 10_000, max: 500_000 }).map((n) => 'c'.repeat(n)),
  );

  it('answers 200 with only the caller’s tenant’s unresolved operations, at most the limit, or 400 validation_failed', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(nameArb, valueArb), { minLength: 0, maxLength: 5 }),
          fc.constantFrom('both', 'single', 'multi'),
          async (query, queryMaps) => {
            const res = await callRaw(fuzz.api, {
              method: 'GET',
              path: '/v1/operations',
              headers: [['Authorization', 'Bearer operator-a']],
              query,
              queryMaps: queryMaps as RawRequest['queryMaps'],
            });
            if (res.status === 200) {
              const operations = res.body.operations as { arguments_digest: string }[];
              expect(operations.length).toBeLessThanOrEqual(100);
              const limits = query.filter(([n, v]) => n === 'limit' && v !== '').map(([, v]) => Number(v));
              if (limits.length === 1) expect(operations.length).toBeLessThanOrEqual(limits[0] as number);
              for (const op of operations) expect(ownDigests).toContain(op.arguments_digest);
              expectSafeHeaders(res);
            } else {
              expectRefusal(res, ['validation_failed']);
            }
          },
        ),
        { numRuns: runs() },
      );
    });
  });

  /**
   * A cursor is base64url JSON of a DynamoDB key. A well-formed JSON object that is not a key this
   * listing issued (another tenant's position, a wrong shape) once reached DynamoDB, whose
   * ValidationException was answered as a 500; the store now checks a cursor's shape and tenant.
   */
  it('a forged cursor (other tenant’s position, wrong key shape) is 400 validation_failed, never a 5xx', async () => {
    const page = await callRaw(fuzz.api, {
      method: 'GET',
      path: '/v1/operations',
      headers: [['Authorization', 'Bearer operator-b']],
      query: [['limit', '1']],
    });
    const otherTenants = page.body.next_cursor as string;
    expect(typeof otherTenants).toBe('string');
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cursorArb = fc.oneof(
      fc.constant(otherTenants),
      fc.constant(encode({})),
      fc
        .dictionary(
          fc.constantFrom('pk', 'sk', 'unresolved_tenant', 'unresolved_at', 'x'),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .map(encode),
    );
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(cursorArb, async (cursor) => {
          const res = await callRaw(fuzz.api, {
            method: 'GET',
            path: '/v1/operations',
            headers: [['Authorization', 'Bearer operator-a']],
            query: [['cursor', cursor]],
          });
          if (res.status === 200) {
            for (const op of res.body.operations as { arguments_digest: string }[]) {
              expect(ownDigests).toContain(op.arguments_digest);
            }
          } else {
            expectRefusal(res, ['validation_failed']);
          }
        }),
        { numRuns: runs(0.2) },
      );
    });
  });
});
