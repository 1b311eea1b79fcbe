import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

/**
 * A payload is the JSON text of an operation's arguments or result. This module says how its bytes are
 * kept (as they are, or brotli-compressed when that is smaller) and how a payload kept elsewhere is
 * named and checked ({@link PayloadRef}); where it goes is the engine's decision
 * (functions/engine/payload-placement.ts).
 */

/** Largest result kept, UTF-8 bytes of its JSON (6 MB: what a Lambda answer can carry). */
export const MAX_RESULT_BYTES = 6_000_000;

/** How a payload's bytes encode its JSON text. */
export type PayloadEncoding = 'identity' | 'br';

/**
 * A payload kept outside its record: a body item in the ledger table or an object in the payload
 * bucket, checked against `sha256` on every read.
 */
export interface PayloadRef {
  /** Where the body is. */
  at: 'item' | 'object';
  /**
   * The body's key in its store: `<owner>/<name>` for an item, the object key for an object
   * (functions/contract/payload-objects.ts).
   */
  key: string;
  /** Lowercase hex SHA-256 of the JSON text (not of the stored bytes): what every read must match. */
  sha256: string;
  /** UTF-8 bytes of the JSON text. */
  size: number;
  /** How the stored bytes encode the text. */
  encoding: PayloadEncoding;
}

/** Why a succeeded record holds no result (it is shown as `result: null` with this reason). */
export interface ResultUnavailable {
  /**
   * `sanitize_failed`: the tool's `sanitizeResult` threw; `result_too_large`: its JSON is over
   * {@link MAX_RESULT_BYTES}; `result_not_stored`: neither store took it before the commit had to
   * be written.
   */
  code: 'sanitize_failed' | 'result_too_large' | 'result_not_stored';
  /** UTF-8 bytes of the result's JSON, when it was known. */
  size?: number;
  /** Its SHA-256, when it was known: evidence of what the effect returned. */
  sha256?: string;
}

/** Payloads shorter than this are kept as they are: compressing them saves nothing worth the time. */
export const COMPRESS_MIN_BYTES = 256;

/**
 * Brotli at quality 4, text mode: about gzip's ratio on a 32 KiB document and far better on large
 * repetitive ones (brotli's window is 4 MiB, gzip's 32 KiB), in a few hundred microseconds per 32 KiB.
 * Deterministic: the same text always gives the same bytes with this Node.
 */
const BROTLI_QUALITY = 4;

/** The last text encoded, so a placement and the write that follows compress it once. */
let lastEncoded: { text: string; compress: boolean; out: EncodedPayload } | undefined;

/** A payload's stored form. */
export interface EncodedPayload {
  bytes: Buffer;
  encoding: PayloadEncoding;
}

/**
 * A payload's stored bytes: brotli when `compress` and that is smaller, else the UTF-8 text.
 *
 * @example
 * ```ts
 * encodePayload(JSON.stringify(doc), true); // { bytes: <Buffer …>, encoding: 'br' }
 * ```
 */
export function encodePayload(text: string, compress: boolean): EncodedPayload {
  const last = lastEncoded;
  if (last !== undefined && last.text === text && last.compress === compress) return last.out;
  const plain = Buffer.from(text, 'utf8');
  let out: EncodedPayload = { bytes: plain, encoding: 'identity' };
  if (compress && plain.length >= COMPRESS_MIN_BYTES) {
    const packed = brotliCompressSync(plain, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: plain.length,
      },
    });
    if (packed.length < plain.length) out = { bytes: packed, encoding: 'br' };
  }
  lastEncoded = { text, compress, out };
  return out;
}

/**
 * The JSON text of stored bytes. `maxBytes` bounds what decompression may produce (a corrupted or
 * hostile body cannot expand without limit); over it, or undecodable, it throws.
 *
 * @example
 * ```ts
 * decodePayload(bytes, 'br', MAX_RESULT_BYTES); // '{"ok":true}'
 * ```
 */
export function decodePayload(bytes: Uint8Array, encoding: PayloadEncoding, maxBytes: number): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const plain =
    encoding === 'br' ? brotliDecompressSync(buffer, { maxOutputLength: Math.max(1, maxBytes) }) : buffer;
  if (plain.length > maxBytes) throw new RangeError('the payload is larger than allowed');
  return new TextDecoder('utf-8', { fatal: true }).decode(plain);
}

/** Lowercase hex SHA-256 of a payload's text. */
export function payloadSha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** UTF-8 bytes of a payload's text. */
export function payloadSize(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Whether `value` has the shape of a {@link PayloadRef} (a stored reference is parsed as hostile). */
export function isPayloadRef(value: unknown): value is PayloadRef {
  if (value === null || typeof value !== 'object') return false;
  const ref = value as Record<string, unknown>;
  return (
    (ref.at === 'item' || ref.at === 'object') &&
    typeof ref.key === 'string' &&
    typeof ref.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(ref.sha256) &&
    Number.isSafeInteger(ref.size) &&
    (ref.encoding === 'identity' || ref.encoding === 'br')
  );
}
