import type { APIGatewayProxyEvent } from 'aws-lambda';
import { MAX_ARGUMENTS_DEPTH } from '../domain/digest';
import { LedgerError, PayloadTooLargeError, ValidationError } from '../domain/errors';
import { parseIJson } from '../domain/i-json';
import { MAX_RESULT_BYTES } from '../domain/payload';

/** Largest request body, in bytes after any base64 decoding (the contract, §5). */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * Largest body of a caller's outcome or verdict, UTF-8 bytes: a whole result (up to 6 MB, what the
 * ledger keeps) and the fields beside it. Every other route takes {@link MAX_BODY_BYTES}.
 */
export const MAX_OUTCOME_BODY_BYTES = MAX_RESULT_BYTES + 64 * 1024;

/** Deepest JSON body: the arguments may nest 32 levels and the envelope adds one. */
export const MAX_BODY_DEPTH = MAX_ARGUMENTS_DEPTH + 1;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Read access to an API Gateway REST proxy event with the HTTP rules applied once: header names are
 * case-insensitive and a header may occur several times (`multiValueHeaders`), query parameters may
 * repeat, bodies may be base64. Errors carry codes only; no header, query or body value is ever
 * copied into a message.
 *
 * @example
 * ```ts
 * const request = new HttpRequest(event);
 * request.headerValues('idempotency-key'); // ['"run-42"']
 * request.jsonBody();                       // the parsed I-JSON body, or a typed 4xx error
 * ```
 */
export class HttpRequest {
  constructor(readonly event: APIGatewayProxyEvent) {}

  /** The method, upper-case. */
  get method(): string {
    return (this.event.httpMethod ?? '').toUpperCase();
  }

  /** The path as API Gateway REST delivers it: still percent-encoded, without the query string. */
  get path(): string {
    return this.event.path ?? '';
  }

  /**
   * Every occurrence of a header, in order. API Gateway puts each occurrence in `multiValueHeaders`
   * and only the last in `headers`, so the multi-value map wins whenever it names the header at all.
   */
  headerValues(name: string): string[] {
    const wanted = name.toLowerCase();
    const multi = collect(this.event.multiValueHeaders, wanted);
    if (multi.length > 0) return multi;
    return collect(this.event.headers, wanted);
  }

  /** True when a `Prefer` header asks for the given preference token (RFC 7240). */
  prefers(token: string): boolean {
    return this.headerValues('prefer')
      .flatMap((value) => value.split(','))
      .some((pref) => (pref.split(/[;=]/)[0] ?? '').trim().toLowerCase() === token);
  }

  /**
   * The query parameters, each at most once. A repeated parameter or one the route does not know is
   * `validation_failed`: a typo (`limt=5`) should fail loudly rather than be ignored.
   */
  query(allowed: readonly string[]): Record<string, string> {
    const out: Record<string, string> = {};
    const multi = this.event.multiValueQueryStringParameters ?? {};
    const single = this.event.queryStringParameters ?? {};
    for (const name of new Set([...Object.keys(multi), ...Object.keys(single)])) {
      const values = multi[name] ?? (single[name] === undefined ? [] : [single[name] as string]);
      if (!allowed.includes(name)) {
        // A short, plain name is the caller's own typo, worth echoing; anything else is not repeated back.
        const shown = /^[A-Za-z0-9_-]{1,40}$/.test(name) ? name : undefined;
        const known =
          allowed.length > 0 ? ` (this route takes: ${allowed.join(', ')})` : ' (this route takes none)';
        throw new ValidationError(
          shown ? `unknown query parameter "${shown}"${known}` : `unknown query parameter${known}`,
          [{ path: shown ? `query.${shown}` : 'query', message: 'unknown query parameter' }],
        );
      }
      if (values.length > 1) {
        throw new ValidationError('a query parameter is repeated', [
          { path: `query.${name}`, message: 'repeated' },
        ]);
      }
      if (values[0] !== undefined) out[name] = values[0];
    }
    return out;
  }

  /**
   * The body as I-JSON, after the checks of the contract's §5 in order: media type (415), size (413), UTF-8
   * (400), then syntax, duplicate keys, depth and prototype keys (400). Hostile input is refused
   * before `JSON.parse` sees it. `maxDepth` is for envelopes that nest the arguments deeper (MCP).
   */
  jsonBody(maxDepth: number = MAX_BODY_DEPTH, maxBytes: number = MAX_BODY_BYTES): unknown {
    assertJsonMediaType(this.headerValues('content-type'));
    return parseIJson(this.bodyText(maxBytes), { maxDepth, maxBytes });
  }

  private bodyText(maxBytes: number): string {
    const body = this.event.body;
    if (body === null || body === undefined || body.length === 0) {
      throw new ValidationError('a JSON body is required', [{ path: '$', message: 'missing' }]);
    }
    if (!this.event.isBase64Encoded) {
      if (body.length > maxBytes || Buffer.byteLength(body, 'utf8') > maxBytes) {
        throw tooLarge(maxBytes);
      }
      if (!body.isWellFormed()) throw notUtf8();
      return body;
    }
    // Four base64 characters carry three bytes: refuse before allocating for a huge body.
    if (body.length > Math.ceil(maxBytes / 3) * 4) throw tooLarge(maxBytes);
    if (body.length % 4 !== 0 || !BASE64.test(body)) {
      throw new ValidationError('the body is not valid base64', [{ path: '$', message: 'invalid' }]);
    }
    const bytes = Buffer.from(body, 'base64');
    if (bytes.length > maxBytes) throw tooLarge(maxBytes);
    try {
      return UTF8.decode(bytes);
    } catch {
      throw notUtf8();
    }
  }
}

/**
 * Accepts `application/json`, optionally with `charset=utf-8` (any case, quoted or not), and nothing
 * else: JSON is UTF-8 (RFC 8259), so another charset would be a lie the parser cannot honour.
 */
export function assertJsonMediaType(values: readonly string[]): void {
  if (values.length !== 1) throw unsupported();
  const [type, ...params] = (values[0] as string).split(';');
  if ((type ?? '').trim().toLowerCase() !== 'application/json') throw unsupported();
  for (const param of params) {
    if (param.trim() === '') continue;
    const eq = param.indexOf('=');
    const name = param.slice(0, eq).trim().toLowerCase();
    let value = param
      .slice(eq + 1)
      .trim()
      .toLowerCase();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (eq < 0 || name !== 'charset' || value !== 'utf-8') throw unsupported();
  }
}

function collect(map: Record<string, unknown> | null | undefined, wanted: string): string[] {
  if (!map) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(map)) {
    if (key.toLowerCase() !== wanted || value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      for (const v of value) if (typeof v === 'string') out.push(v);
    } else if (typeof value === 'string') {
      out.push(value);
    }
  }
  return out;
}

function unsupported(): LedgerError {
  return new LedgerError(
    'unsupported_media_type',
    'the body must be sent as Content-Type: application/json (charset utf-8 at most)',
  );
}

function tooLarge(maxBytes: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the body is larger than ${maxBytes} bytes`);
}

function notUtf8(): ValidationError {
  return new ValidationError('the body is not valid UTF-8', [{ path: '$', message: 'invalid encoding' }]);
}
