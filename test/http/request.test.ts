import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../functions/domain/errors';
import { LedgerError, ValidationError } from '../../functions/domain/errors';
import { PROBLEMS, problemResponse, statusOf } from '../../functions/http/problem';
import { assertJsonMediaType, HttpRequest } from '../../functions/http/request';
import { matchRoute } from '../../functions/http/router';
import { operationIdParam } from '../../functions/http/routes';
import { toEvent } from './support';

describe('HttpRequest headers', () => {
  it('reads every occurrence from multiValueHeaders, case-insensitively', () => {
    const event = toEvent({
      path: '/',
      token: null,
      headers: [
        ['X-A', '1'],
        ['x-a', '2'],
        ['X-A', '3'],
      ],
    });
    expect(new HttpRequest(event).headerValues('x-a')).toEqual(['1', '3', '2']);
  });

  it('falls back to headers when multiValueHeaders is absent or does not name the header', () => {
    const event = toEvent({ path: '/', token: null });
    event.headers = { 'X-Only-Single': 'v' };
    event.multiValueHeaders = {};
    expect(new HttpRequest(event).headerValues('x-only-single')).toEqual(['v']);
    (event as { multiValueHeaders: unknown }).multiValueHeaders = undefined;
    expect(new HttpRequest(event).headerValues('X-ONLY-SINGLE')).toEqual(['v']);
  });

  it('finds respond-async among other preferences', () => {
    const request = (value: string) =>
      new HttpRequest(toEvent({ path: '/', token: null, headers: [['Prefer', value]] }));
    expect(request('respond-async').prefers('respond-async')).toBe(true);
    expect(request('wait=10, Respond-Async').prefers('respond-async')).toBe(true);
    expect(request('return=minimal').prefers('respond-async')).toBe(false);
    expect(request('respond-asynchronously').prefers('respond-async')).toBe(false);
  });
});

describe('assertJsonMediaType', () => {
  it.each([['application/json'], ['application/json; charset=utf-8'], ['APPLICATION/JSON;CHARSET="utf-8"']])(
    'accepts %s',
    (value) => {
      expect(() => assertJsonMediaType([value])).not.toThrow();
    },
  );
  it.each([
    [[] as string[]],
    [['']],
    [['text/json']],
    [['application/json; charset=utf-16']],
    [['application/json; charset']],
    [['application/json; boundary=x']],
    [['application/json', 'application/json']],
    [['application/json, text/plain']],
  ])('refuses %j with unsupported_media_type', (values) => {
    expect(() => assertJsonMediaType(values)).toThrow(
      expect.objectContaining({ code: 'unsupported_media_type' }),
    );
  });
});

describe('matchRoute', () => {
  const routes = [
    { method: 'GET', pattern: '/v1/operations/{id}' },
    { method: 'POST', pattern: '/v1/operations/{id}/approval' },
  ];
  it('captures one raw segment, so an encoded slash stays inside the ID', () => {
    expect(matchRoute(routes, 'GET', '/v1/operations/a%2Fb')).toMatchObject({
      kind: 'found',
      params: { id: 'a%2Fb' },
    });
    expect(matchRoute(routes, 'GET', '/v1/operations/a/b')).toEqual({ kind: 'not_found' });
    expect(matchRoute(routes, 'GET', '/v1/operations/')).toEqual({ kind: 'not_found' });
  });
  it('reports the allowed methods of a known path', () => {
    expect(matchRoute(routes, 'PUT', '/v1/operations/x')).toEqual({
      kind: 'method_not_allowed',
      allow: ['GET'],
    });
  });
});

describe('operationIdParam', () => {
  it('decodes once and validates', () => {
    expect(operationIdParam('a%2Fb%2541')).toBe('a/b%41');
    expect(() => operationIdParam('%')).toThrow(expect.objectContaining({ code: 'idempotency_key_invalid' }));
    expect(() => operationIdParam('a%0Ab')).toThrow(
      expect.objectContaining({ code: 'idempotency_key_invalid' }),
    );
  });
});

describe('problem mapping', () => {
  it('maps every code of SPEC §5 and §14 to its status', () => {
    const table: Record<string, number> = {
      idempotency_key_missing: 400,
      idempotency_key_invalid: 400,
      validation_failed: 400,
      tool_unknown: 400,
      tool_executed_by_ledger: 400,
      unauthenticated: 401,
      forbidden: 403,
      self_approval: 403,
      caller_tool_not_allowed: 403,
      host_not_allowed: 403,
      origin_not_allowed: 403,
      not_found: 404,
      method_not_allowed: 405,
      operation_in_progress: 409,
      approval_mismatch: 409,
      state_changed: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      idempotency_key_reused: 422,
      // Not in the contract's table: a tenant over its requests per second (the deployment's limit).
      throttled: 429,
      internal_error: 500,
      ledger_unavailable: 503,
      // The contract's §8: a result kept in the object store that is missing, altered or unreadable.
      result_unavailable: 503,
    };
    expect(Object.keys(PROBLEMS).sort()).toEqual(Object.keys(table).sort());
    for (const [code, status] of Object.entries(table)) expect(statusOf(code as ErrorCode)).toBe(status);
  });

  it('renders RFC 9457 members, keeps details, and never lets details overwrite them', () => {
    const error = new ValidationError('bad', [{ path: '$.a', message: 'x' }]);
    const res = problemResponse(error, 'req-1', { status: 999, code: 'hacked', extra: 1 });
    const body = JSON.parse(res.body);
    expect(res.statusCode).toBe(400);
    expect(body).toEqual({
      type: 'urn:tool-ledger:problem:validation_failed',
      title: 'The request is invalid',
      status: 400,
      code: 'validation_failed',
      detail: 'bad',
      request_id: 'req-1',
      issues: [{ path: '$.a', message: 'x' }],
      extra: 1,
    });
  });

  it('hides everything about an unexpected error', () => {
    for (const error of [
      new Error('secret /var/task'),
      'a string',
      { code: 'not_found' },
      new LedgerError('nope' as ErrorCode, 'x'),
    ]) {
      const res = problemResponse(error, 'r');
      expect(res.statusCode).toBe(500);
      expect(JSON.parse(res.body)).toEqual({
        type: 'urn:tool-ledger:problem:internal_error',
        title: 'Internal error',
        status: 500,
        code: 'internal_error',
        request_id: 'r',
      });
    }
  });

  it('ledger_unavailable carries Retry-After', () => {
    const res = problemResponse(new LedgerError('ledger_unavailable', 'down'), 'r');
    expect(res.statusCode).toBe(503);
    expect(Number(res.headers?.['Retry-After'])).toBeGreaterThan(0);
  });
});
