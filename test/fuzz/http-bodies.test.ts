import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ErrorCode } from '../../functions/domain/errors';
import { captureOutput, type TestRequest } from '../http/support';
import {
  errorLines,
  expectRefusal,
  FUZZ_TEST_TIMEOUT_MS,
  type FuzzApi,
  runs,
  startFuzzApi,
  WEBHOOK_ORIGIN,
} from './fuzz-api';
import { BAD_NUMBERS, defectArb, type Json, jsonTreeArb, NON_UTF8, writeJson } from './hostile-json';

/**
 * Bad-input fuzzing of the request bodies of SPEC §5 (submit, approval, resolution) through the real
 * API handler on dynalite. Every refused case must be a 4xx problem with a code from the SPEC's list,
 * create no record, change no record, run nothing, and log no error (the handler logs an error exactly
 * when it answers a 5xx). test/http/hostile-input.test.ts holds the hand-picked cases; these are the
 * generated ones around them.
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

let keyCounter = 0;
/** A fresh operation ID per case, so that no case can be a replay of another. */
function freshKey(): string {
  keyCounter += 1;
  return `fuzz-${keyCounter}`;
}

function submitRequest(body: string, extra: Partial<TestRequest> = {}): TestRequest {
  return { method: 'POST', path: '/v1/operations', key: freshKey(), body, token: 'agent-a', ...extra };
}

/** Runs `check` with stdout and stderr captured and asserts nothing was logged at error level. */
async function withoutErrors(check: () => Promise<void>): Promise<void> {
  const { lines } = await captureOutput(check);
  expect(errorLines(lines)).toEqual([]);
}

/** Sends a request that must be refused, and checks the store and the tools did not move. */
async function refused(request: TestRequest, codes?: readonly ErrorCode[]): Promise<ErrorCode> {
  const before = await fuzz.api.recordCount();
  const starts = fuzz.starts();
  const res = await fuzz.api.call(request);
  const code = expectRefusal(res, codes);
  expect(await fuzz.api.recordCount()).toBe(before);
  expect(fuzz.starts()).toBe(starts);
  return code;
}

/** The same tree with every object's keys in reverse order (the digest must not notice). */
function reversedKeys(value: Json): Json {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(reversedKeys);
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, child]) => [key, reversedKeys(child)]),
  );
}

describe('POST /v1/operations: generated bodies', () => {
  it('the writer of planted defects is exact: without a defect it writes what JSON.parse reads back', () => {
    fc.assert(
      fc.property(jsonTreeArb(5), (tree) => {
        expect(JSON.parse(writeJson(tree))).toEqual(tree);
      }),
      { numRuns: runs(2) },
    );
  });

  it('a valid call with unicode and control characters in keys and values runs once, stores the arguments exactly, and replays with keys reordered', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(jsonTreeArb(4), fc.boolean(), async (value, base64) => {
          const key = freshKey();
          const body = writeJson({ tool: 'test.effect', arguments: { target: 't', value } });
          const first = await fuzz.api.call(submitRequest(body, { key, base64 }));
          expect(first.status, JSON.stringify(first.body)).toBe(201);
          const read = await fuzz.api.call({
            path: `/v1/operations/${key}`,
            token: 'all-a',
            query: [['include', 'arguments']],
          });
          expect(read.body.arguments).toEqual({ target: 't', value });
          const again = writeJson(reversedKeys({ arguments: { value, target: 't' }, tool: 'test.effect' }));
          const replay = await fuzz.api.call(submitRequest(again, { key }));
          expect(replay.status).toBe(201);
          expect(replay.headers['Idempotent-Replayed']).toBe('true');
          expect(replay.body.arguments_digest).toBe(first.body.arguments_digest);
        }),
        { numRuns: runs(0.5) },
      );
    });
  });

  it('one defect anywhere in the body (duplicate or prototype key, NaN-like number, raw control, lone surrogate, broken syntax) is 400 validation_failed with no record', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          jsonTreeArb(4),
          defectArb,
          fc.nat(),
          fc.boolean(),
          async (value, defect, at, base64) => {
            const envelope: Json = { tool: 'test.effect', arguments: { target: 't', value } };
            const body = writeJson(envelope, defect, at);
            // A raw lone surrogate cannot be UTF-8 encoded: it only travels as a text body.
            const asBase64 = base64 && body.isWellFormed();
            await refused(submitRequest(body, { base64: asBase64 }), ['validation_failed']);
          },
        ),
        { numRuns: runs() },
      );
    });
  });

  it('every NaN-like number at every value position of the envelope is 400 validation_failed', async () => {
    const positions = [
      (n: string) => n,
      (n: string) => `{"tool":${n},"arguments":{"target":"t"}}`,
      (n: string) => `{"tool":"test.effect","arguments":${n}}`,
      (n: string) => `{"tool":"test.effect","arguments":{"target":${n}}}`,
      (n: string) => `{"tool":"test.effect","arguments":{"target":"t","value":${n}}}`,
      (n: string) => `{"tool":"test.effect","arguments":{"target":"t","value":[1,${n}]}}`,
      (n: string) => `{"tool":"test.effect","arguments":{"target":"t"},"agent_run_id":${n}}`,
    ];
    await withoutErrors(async () => {
      for (const token of BAD_NUMBERS) {
        for (const position of positions)
          await refused(submitRequest(position(token)), ['validation_failed']);
      }
    });
  });

  it('nesting is accepted up to 32 levels of arguments and refused beyond, for any mix of arrays and objects', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.boolean(), { minLength: 26, maxLength: 40 }), async (shape) => {
          // arguments (level 1) → value (level 2) → shape.length more containers.
          let inner: Json = 'leaf';
          for (const isArray of shape) inner = isArray ? [inner] : { k: inner };
          const body = writeJson({ tool: 'test.effect', arguments: { target: 't', value: inner } });
          const depth = 1 + shape.length;
          if (depth <= 32) {
            const res = await fuzz.api.call(submitRequest(body));
            expect(res.status, `depth ${depth}`).toBe(201);
          } else {
            await refused(submitRequest(body), ['validation_failed']);
          }
        }),
        { numRuns: runs(0.3) },
      );
      for (const depth of [1_000, 100_000, 1_000_000]) {
        await refused(submitRequest(`{"tool":"test.effect","arguments":${'{"a":'.repeat(depth)}1`), [
          'validation_failed',
          'payload_too_large',
        ]);
        await refused(submitRequest(`${'['.repeat(depth)}${']'.repeat(depth)}`), [
          'validation_failed',
          'payload_too_large',
        ]);
      }
    });
  });

  it('canonical arguments are limited to 64 KiB in UTF-8 bytes, whatever the characters: 413 beyond, with no record', async () => {
    const unit = fc.constantFrom('a', 'é', '€', '😀', '\u0001', '"');
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(unit, fc.integer({ min: -40, max: 40 }), async (char, delta) => {
          // Size the string so that the canonical arguments land within a few bytes of the limit.
          const overhead = Buffer.byteLength(canonicalize({ target: 't', value: '' }) as string);
          const charBytes = Buffer.byteLength(canonicalize(char) as string) - 2;
          const count = Math.floor((64 * 1024 - overhead) / charBytes) + delta;
          const args = { target: 't', value: char.repeat(count) };
          const size = Buffer.byteLength(canonicalize(args) as string);
          const body = JSON.stringify({ tool: 'test.effect', arguments: args });
          if (Buffer.byteLength(body) > 256 * 1024) return;
          if (size <= 64 * 1024) {
            const res = await fuzz.api.call(submitRequest(body));
            expect(res.status, `canonical ${size} bytes`).toBe(201);
          } else {
            await refused(submitRequest(body), ['payload_too_large']);
          }
        }),
        { numRuns: runs(0.2) },
      );
    });
  });

  it('huge payloads (wide arrays, many keys, long strings, whole bodies past 256 KiB) are 413 or 400, never 5xx', async () => {
    const huge = fc.oneof(
      fc.integer({ min: 33_000, max: 150_000 }).map((n) => ({ kind: 'array', n })),
      fc.integer({ min: 10_000, max: 30_000 }).map((n) => ({ kind: 'keys', n })),
      fc.integer({ min: 70_000, max: 400_000 }).map((n) => ({ kind: 'string', n })),
      fc.integer({ min: 262_145, max: 3_000_000 }).map((n) => ({ kind: 'padding', n })),
    );
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(huge, fc.boolean(), async ({ kind, n }, base64) => {
          let body: string;
          if (kind === 'array')
            body = `{"tool":"test.effect","arguments":{"target":"t","value":[${'0,'.repeat(n)}0]}}`;
          else if (kind === 'keys') {
            const members = Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',');
            body = `{"tool":"test.effect","arguments":{"target":"t","value":{${members}}}}`;
          } else if (kind === 'string')
            body = JSON.stringify({ tool: 'test.effect', arguments: { target: 'x'.repeat(n) } });
          else body = `{"tool":"test.effect","arguments":{"target":"t"}}${' '.repeat(n)}`;
          await refused(submitRequest(body, { base64 }), ['payload_too_large', 'validation_failed']);
        }),
        { numRuns: runs(0.1) },
      );
    });
  });

  it('bytes that are not UTF-8, anywhere in a base64 body, are 400 validation_failed', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...NON_UTF8),
          fc.nat(),
          fc.string({ unit: 'grapheme', maxLength: 8 }),
          async (bad, position, target) => {
            const text = Buffer.from(JSON.stringify({ tool: 'test.effect', arguments: { target } }), 'utf8');
            const at = position % (text.length + 1);
            const bytes = Buffer.concat([text.subarray(0, at), Buffer.from(bad), text.subarray(at)]);
            await refused(submitRequest('', { base64: bytes }), ['validation_failed']);
          },
        ),
        { numRuns: runs() },
      );
    });
  });

  /** What a field expects, to generate a value of every other JSON type. */
  type Expected = 'string' | 'object' | 'json';
  const wrongFor = (expected: Expected): fc.Arbitrary<unknown> => {
    const all: Record<string, fc.Arbitrary<unknown>> = {
      string: fc.string({ maxLength: 5 }),
      number: fc.oneof(
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 }),
      ),
      boolean: fc.boolean(),
      null: fc.constant(null),
      array: fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }),
      object: fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 3 }),
    };
    const kinds = Object.keys(all).filter((kind) => kind !== expected && expected !== 'json');
    return fc.oneof(...kinds.map((kind) => all[kind] as fc.Arbitrary<unknown>));
  };

  /**
   * Every tool of the deployment with a valid call and the type of each of its fields: a wrong type
   * at any field, a missing required field or an unknown field must be refused before a record.
   */
  const calls: {
    tool: string;
    args: Record<string, unknown>;
    fields: Record<string, Expected>;
    required: string[];
  }[] = [
    {
      tool: 'test.effect',
      args: { target: 't', value: 1 },
      fields: { target: 'string' },
      required: ['target'],
    },
    {
      tool: 'workspace.write_file',
      args: { path: 'a.txt', content: 'x' },
      fields: { path: 'string', content: 'string' },
      required: ['path', 'content'],
    },
    {
      tool: 'workspace.append_line',
      args: { path: 'a.txt', line: 'x' },
      fields: { path: 'string', line: 'string' },
      required: ['path', 'line'],
    },
    {
      tool: 'workspace.delete_file',
      args: { path: 'a.txt' },
      fields: { path: 'string' },
      required: ['path'],
    },
    {
      tool: 'webhook.post',
      args: { url: `${WEBHOOK_ORIGIN}/hook`, json: { a: 1 }, headers: { 'x-a': 'b' } },
      fields: { url: 'string', headers: 'object' },
      required: ['url'],
    },
  ];

  /** Values of the right type that the tools must still refuse (paths, URLs, header maps). */
  const badValues: Record<string, unknown[]> = {
    path: ['', '../escape', '/etc/passwd', 'a/../../b', 'a\u0000b', 'a\\b', 'dir/', '.tool-ledger/x', 'a\nb'],
    url: [
      '',
      'ftp://127.0.0.1:9/',
      'http://user:pw@127.0.0.1:9/',
      'http://@127.0.0.1:9/',
      'http://127.0.0.1:10/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:127.0.0.1]:9/',
      'http://0.0.0.0:9/',
      'file:///etc/passwd',
      'http://127.0.0.1:9\r\nHost: evil/',
      `${WEBHOOK_ORIGIN}/${'p'.repeat(3000)}`,
    ],
    headers: [
      { Host: 'evil' },
      { authorization: 'x' },
      { 'Idempotency-Key': 'mine' },
      { 'x-idempotency-key': 'mine' },
      { 'x-forwarded-for': '10.0.0.1' },
      { 'x-a': 'a\r\nInjected: 1' },
      { 'x-a': 'a\u0000b' },
      { 'x-a': 'é' },
      { 'x-a': 1 },
      { 'x-a': 'b', 'X-A': 'c' },
      Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])),
    ],
  };

  it('a wrong type at any field, a missing or unknown field, or a refused value, for every tool, is a 400 with no record', async () => {
    const envelopeFields: Record<string, Expected> = {
      tool: 'string',
      arguments: 'object',
      agent_run_id: 'string',
    };
    const mutation = fc.oneof(
      fc.record({
        where: fc.constant('envelope' as const),
        field: fc.constantFrom(...Object.keys(envelopeFields)),
      }),
      fc.record({ where: fc.constant('argument' as const), field: fc.string() }),
      fc.record({ where: fc.constant('missing' as const), field: fc.string() }),
      fc.record({
        where: fc.constant('unknown' as const),
        field: fc.string({ minLength: 1, maxLength: 10 }),
      }),
      fc.record({ where: fc.constant('bad_value' as const), field: fc.string() }),
    );
    let refusedCases = 0;
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...calls),
          mutation,
          fc.nat(),
          fc.gen(),
          async (call, m, pick, g) => {
            const body: Record<string, unknown> = { tool: call.tool, arguments: { ...call.args } };
            const args = body.arguments as Record<string, unknown>;
            const fieldNames = Object.keys(call.fields);
            if (m.where === 'envelope') {
              body[m.field] = g(() => wrongFor(envelopeFields[m.field] as Expected));
            } else if (m.where === 'argument') {
              const field = fieldNames[pick % fieldNames.length] as string;
              args[field] = g(() => wrongFor(call.fields[field] as Expected));
            } else if (m.where === 'missing') {
              delete args[call.required[pick % call.required.length] as string];
            } else if (m.where === 'unknown') {
              if (m.field in call.args || ['__proto__', 'constructor', 'prototype'].includes(m.field)) return;
              if (pick % 2 === 0) args[m.field] = 1;
              else
                body[
                  m.field === 'tool' || m.field === 'arguments' || m.field === 'agent_run_id'
                    ? 'tenant'
                    : m.field
                ] = 'x';
            } else {
              const field = ['path', 'url', 'headers'].find((f) => f in call.args);
              if (field === undefined) return;
              const values = badValues[field] as unknown[];
              args[field] = values[pick % values.length];
            }
            await refused(submitRequest(JSON.stringify(body)), ['validation_failed', 'tool_unknown']);
            refusedCases += 1;
          },
        ),
        { numRuns: runs(1.5) },
      );
    });
    expect(refusedCases).toBeGreaterThan(runs(1.5) / 2);
  });

  it('agent_run_id must be 1 to 255 printable ASCII characters', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.stringMatching(/^[\x21-\x7e]{1,260}$/), fc.string({ unit: 'binary', maxLength: 300 })),
          async (runId) => {
            const body = JSON.stringify({
              tool: 'test.effect',
              arguments: { target: 't' },
              agent_run_id: runId,
            });
            if (/^[\x21-\x7e]{1,255}$/.test(runId)) {
              expect((await fuzz.api.call(submitRequest(body))).status).toBe(201);
            } else {
              await refused(submitRequest(body), ['validation_failed']);
            }
          },
        ),
        { numRuns: runs(0.5) },
      );
    });
  });
});

describe('POST /v1/operations/{id}/approval and /resolution: generated bodies', () => {
  let pendingApproval: { id: string; digest: string };
  let uncertain: { id: string; digest: string; attempt: number };

  beforeEach(async () => {
    const approvalId = freshKey();
    const a = await fuzz.api.call({
      method: 'POST',
      path: '/v1/operations',
      key: approvalId,
      body: { tool: 'test.approve', arguments: { target: 'a' } },
    });
    expect(a.body.state).toBe('awaiting_approval');
    pendingApproval = { id: approvalId, digest: a.body.arguments_digest as string };
    const uncertainId = freshKey();
    fuzz.effect.next({ kind: 'uncertain', code: 'lost' });
    const u = await fuzz.api.call({
      method: 'POST',
      path: '/v1/operations',
      key: uncertainId,
      body: { tool: 'test.effect', arguments: { target: 'u' } },
    });
    expect(u.body.state).toBe('uncertain');
    uncertain = {
      id: uncertainId,
      digest: u.body.arguments_digest as string,
      attempt: u.body.attempt as number,
    };
  });

  /** The record as stored, to prove a refused decision changed nothing. */
  async function stored(id: string): Promise<unknown> {
    const res = await fuzz.api.call({
      path: `/v1/operations/${id}`,
      token: 'all-a',
      query: [['include', 'history']],
    });
    return res.body;
  }

  async function refusedDecision(
    route: 'approval' | 'resolution',
    body: string,
    codes: readonly ErrorCode[],
  ): Promise<void> {
    const id = route === 'approval' ? pendingApproval.id : uncertain.id;
    const before = await stored(id);
    const queued = fuzz.api.ledger.queue.messages.length;
    await refused(
      {
        method: 'POST',
        path: `/v1/operations/${id}/${route}`,
        token: route === 'approval' ? 'approver-a' : 'operator-a',
        body,
      },
      codes,
    );
    expect(await stored(id)).toEqual(before);
    expect(fuzz.api.ledger.queue.messages.length).toBe(queued);
  }

  const valueOfAnyType = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 2 }),
    fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
  );

  it('approval: a wrong type or value at any field, a missing or unknown field, or a planted defect is 400 and changes nothing', async () => {
    const body = fc.oneof(
      fc.record({
        decision: valueOfAnyType.filter((v) => v !== 'approve' && v !== 'reject'),
        arguments_digest: fc.constant('DIGEST'),
      }),
      fc.record({
        decision: fc.constantFrom('approve', 'reject'),
        arguments_digest: fc.oneof(
          valueOfAnyType,
          fc.constantFrom('v1:', 'v1:XYZ', 'v2:00', 'DIGEST ', ' DIGEST', 'DIGEST\n', 'V1:DIGEST_HEX'),
        ),
      }),
      fc.record(
        { decision: fc.constantFrom('approve', 'reject', 'APPROVE', 'approve ') },
        { requiredKeys: [] },
      ),
      fc.record({
        decision: fc.constantFrom('approve', 'reject'),
        arguments_digest: fc.constant('DIGEST'),
        extra: fc.constantFrom('tenant', 'principal', 'state', 'by', 'x'),
      }),
    );
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(body, defectArb, fc.nat(), fc.boolean(), async (raw, defect, at, plant) => {
          const b: Record<string, unknown> = { ...raw };
          if ('extra' in b) {
            b[b.extra as string] = 'acme';
            b.arguments_digest = pendingApproval.digest;
            delete b.extra;
          }
          if (b.arguments_digest === 'DIGEST') b.arguments_digest = pendingApproval.digest;
          else if (typeof b.arguments_digest === 'string') {
            b.arguments_digest = b.arguments_digest
              .replace('DIGEST_HEX', pendingApproval.digest.slice(3))
              .replace('DIGEST', pendingApproval.digest);
          }
          const valid =
            (b.decision === 'approve' || b.decision === 'reject') &&
            b.arguments_digest === pendingApproval.digest &&
            Object.keys(b).length === 2;
          if (valid && !plant) return;
          const text = plant ? writeJson(b as Json, defect, at) : JSON.stringify(b);
          await refusedDecision('approval', text, ['validation_failed']);
        }),
        { numRuns: runs() },
      );
    });
  });

  it('approval: a well-formed digest of other arguments is 409 approval_mismatch and changes nothing', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(fc.stringMatching(/^[0-9a-f]{64}$/), async (hex) => {
          if (`v1:${hex}` === pendingApproval.digest) return;
          const body = JSON.stringify({ decision: 'approve', arguments_digest: `v1:${hex}` });
          await refusedDecision('approval', body, ['approval_mismatch']);
        }),
        { numRuns: runs(0.2) },
      );
    });
  });

  it('resolution: a wrong type or value at any field, a missing or unknown field, or a planted defect is 400 and changes nothing', async () => {
    const body = fc.oneof(
      fc.record({
        outcome: valueOfAnyType.filter((v) => v !== 'applied' && v !== 'not_applied' && v !== 'failed'),
      }),
      fc.record({
        outcome: fc.constantFrom('applied', 'not_applied', 'failed'),
        attempt: fc.oneof(
          fc.string({ maxLength: 3 }),
          fc.constantFrom(-1, 0.5, 1.5, -0.5, 2 ** 53, 1e300, true, null, [1], { n: 1 }, '1'),
        ),
      }),
      fc.record({
        outcome: fc.constantFrom('not_applied', 'failed'),
        result: valueOfAnyType,
      }),
      fc.record({ result: valueOfAnyType }),
      fc.record({ outcome: fc.constant('applied'), result: fc.constant('HUGE') }),
      fc.record({
        outcome: fc.constantFrom('applied', 'not_applied', 'failed'),
        extra: fc.constantFrom('tenant', 'resolved_by', 'state', 'principal', 'Outcome'),
      }),
    );
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          body,
          jsonTreeArb(3),
          defectArb,
          fc.nat(),
          fc.boolean(),
          async (raw, tree, defect, at, plant) => {
            const b: Record<string, unknown> = { ...raw };
            if (b.result === 'HUGE') b.result = { blob: 'x'.repeat(33 * 1024) };
            if ('extra' in b) {
              b[b.extra as string] = 'x';
              delete b.extra;
            }
            if (plant) {
              // A valid resolution carrying a tree, with a defect planted in it or around it.
              const text = writeJson(
                { outcome: 'applied', result: tree, attempt: uncertain.attempt },
                defect,
                at,
              );
              await refusedDecision('resolution', text, ['validation_failed']);
              return;
            }
            // 2^53 and 1e300 are integers of a kind: refused as unsafe, or compared with the record's attempt.
            const codes: ErrorCode[] =
              b.attempt === 1e300 || b.attempt === 2 ** 53
                ? ['validation_failed', 'state_changed']
                : ['validation_failed'];
            await refusedDecision('resolution', JSON.stringify(b), codes);
          },
        ),
        { numRuns: runs() },
      );
    });
  });

  it('reconciliations: any body but an empty object (or none) is 400 and runs no pass', async () => {
    await withoutErrors(async () => {
      await fc.assert(
        fc.asyncProperty(
          jsonTreeArb(3),
          defectArb,
          fc.nat(),
          fc.boolean(),
          async (tree, defect, at, plant) => {
            const isEmptyObject =
              tree !== null &&
              typeof tree === 'object' &&
              !Array.isArray(tree) &&
              Object.keys(tree).length === 0;
            if (isEmptyObject && !plant) return;
            const text = plant ? writeJson({ pass: tree }, defect, at) : writeJson(tree);
            const before = await stored(uncertain.id);
            await refused({ method: 'POST', path: '/v1/reconciliations', token: 'operator-a', body: text }, [
              'validation_failed',
            ]);
            // A pass would have reconciled the uncertain operation (its effect happened).
            expect(await stored(uncertain.id)).toEqual(before);
          },
        ),
        { numRuns: runs(0.3) },
      );
    });
  });
});
