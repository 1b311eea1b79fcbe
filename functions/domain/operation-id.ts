import { OperationIdError } from './errors';

/** Longest operation ID accepted (characters). */
export const MAX_OPERATION_ID_LENGTH = 255;

const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * Validates an operation ID: 1 to 255 characters from 0x21 to 0x7E.
 *
 * @example
 * ```ts
 * assertOperationId('run-42-step-3'); // ok
 * assertOperationId('has space');     // throws idempotency_key_invalid
 * ```
 */
export function assertOperationId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length === 0) {
    throw new OperationIdError('idempotency_key_missing', 'an operation ID is required');
  }
  if (id.length > MAX_OPERATION_ID_LENGTH || !PRINTABLE.test(id)) {
    throw new OperationIdError(
      'idempotency_key_invalid',
      'the operation ID must be 1 to 255 printable ASCII characters (0x21-0x7E)',
    );
  }
}

/**
 * Parses an `Idempotency-Key` header value. The IETF draft makes it a structured-field string
 * (`"run-42"`); a bare token (`run-42`) names the same ID. Values arrive as the header's list of
 * occurrences, so two keys (repeated header or a comma list of strings) are refused.
 *
 * @example
 * ```ts
 * parseIdempotencyKey(['"run-42"']); // 'run-42'
 * parseIdempotencyKey(['run-42']);   // 'run-42'
 * ```
 */
export function parseIdempotencyKey(values: readonly string[] | undefined): string {
  if (values === undefined || values.length === 0) {
    throw new OperationIdError('idempotency_key_missing', 'the Idempotency-Key header is required');
  }
  if (values.length > 1) {
    throw new OperationIdError('idempotency_key_invalid', 'exactly one Idempotency-Key header is allowed');
  }
  const raw = (values[0] ?? '').trim();
  if (raw.length === 0) {
    throw new OperationIdError('idempotency_key_missing', 'the Idempotency-Key header is empty');
  }
  let id: string;
  if (raw.startsWith('"')) {
    id = parseSfString(raw);
  } else {
    // In a header, a comma separates list members: an unquoted `a,b` is two keys. An ID that contains
    // a comma must be sent as an sf-string (`"a,b"`).
    if (raw.includes(',')) {
      throw new OperationIdError('idempotency_key_invalid', 'exactly one Idempotency-Key value is allowed');
    }
    id = raw;
  }
  assertOperationId(id);
  return id;
}

/** Parses an RFC 8941 sf-string that must be the whole value (so `"a", "b"` is two keys: refused). */
function parseSfString(raw: string): string {
  let out = '';
  for (let i = 1; i < raw.length; i++) {
    const ch = raw[i] as string;
    if (ch === '\\') {
      const next = raw[i + 1];
      if (next !== '"' && next !== '\\') break;
      out += next;
      i++;
      continue;
    }
    if (ch === '"') {
      if (i !== raw.length - 1) {
        throw new OperationIdError('idempotency_key_invalid', 'exactly one Idempotency-Key value is allowed');
      }
      return out;
    }
    out += ch;
  }
  throw new OperationIdError(
    'idempotency_key_invalid',
    'the Idempotency-Key is not a valid structured-field string',
  );
}
