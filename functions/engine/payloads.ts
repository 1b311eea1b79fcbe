import { resultObjectKey } from '../contract/payload-objects';
import { errorClass, ResultUnavailableError } from '../domain/errors';
import type { OperationRecord, OperationSnapshot } from '../domain/operation';
import {
  decodePayload,
  encodePayload,
  MAX_RESULT_BYTES,
  type PayloadRef,
  payloadSha256,
  payloadSize,
} from '../domain/payload';
import { logger } from '../observability/logger';
import type { LedgerDeps } from './ledger-deps';
import type { SubmitResult } from './submit-result';

/**
 * Where a result goes, and how a result kept elsewhere comes back. A result whose stored form fits in
 * its record's item ({@link MAX_ITEM_RESULT_BYTES}, brotli-compressed where smaller) stays there; a
 * larger one, up to {@link MAX_RESULT_BYTES} of JSON, goes to the deployment's object store, written
 * before the commit that names it (`result_ref`), and is checked by SHA-256 and size on every read.
 *
 * ```
 *  attempt ends ─▶ placeResult: PUT object ─▶ commit (result_ref) ─▶ answer: GET + check ─▶ caller
 *                       │ PUT fails                 │ crash before the commit: the object is an
 *                       ▼                           │ orphan (its own key, expired by the bucket's
 *                  commit succeeded with            │ lifecycle), never named by any record
 *                  result: null, result_unavailable: result_not_stored (the effect happened)
 * ```
 *
 * A deployment without an object store (a test's engine built without one) keeps the form every
 * release before whole results stored above 32 KiB: `{"truncated": true, "size", "sha256"}`.
 */

/**
 * Most bytes a result takes in its record's item, as stored (brotli-compressed where smaller): a
 * result whose JSON is this long or whose compressed form fits is kept in the item, however long
 * its JSON (up to {@link MAX_RESULT_BYTES}).
 */
export const MAX_ITEM_RESULT_BYTES = 32 * 1024;

/** The result fields of a commit: exactly one of these shapes. */
export type PlacedResult =
  | { result: string; result_ref?: undefined; result_unavailable?: undefined }
  | { result_ref: PayloadRef; result?: undefined; result_unavailable?: undefined }
  | {
      result: 'null';
      result_unavailable: NonNullable<OperationRecord['result_unavailable']>;
      result_ref?: undefined;
    };

/**
 * The form a result had before whole results: its size and SHA-256, kept when it cannot be kept whole
 * (no object store, or over {@link MAX_RESULT_BYTES}).
 *
 * @example
 * ```ts
 * truncatedResult(bigJson); // '{"truncated":true,"size":40000,"sha256":"…"}'
 * ```
 */
export function truncatedResult(json: string): string {
  return JSON.stringify({ truncated: true, size: payloadSize(json), sha256: payloadSha256(json) });
}

/**
 * Decides where the result `json` of `record`'s current attempt is kept, and writes it to the object
 * store when it goes there. Never throws: the effect happened, so its commit must be written whatever
 * becomes of the result. A store that refuses or does not answer gives `result: null` with
 * `result_unavailable: {code: 'result_not_stored', size, sha256}` (evidence of what the effect
 * returned), never a failed or uncertain record.
 *
 * @example
 * ```ts
 * const placed = await placeResult(deps, record, JSON.stringify(value));
 * // { result: '…' } | { result_ref: { at: 'object', … } } | { result: 'null', result_unavailable }
 * ```
 */
export async function placeResult(
  deps: Pick<LedgerDeps, 'objects'>,
  record: Pick<OperationRecord, 'tenant' | 'operation_id' | 'reservation_id' | 'attempt' | 'tool'>,
  json: string,
): Promise<PlacedResult> {
  const size = payloadSize(json);
  if (size <= MAX_ITEM_RESULT_BYTES) return { result: json };
  if (size > MAX_RESULT_BYTES) return { result: truncatedResult(json) };
  const encoded = encodePayload(json, true);
  if (encoded.bytes.length <= MAX_ITEM_RESULT_BYTES) return { result: json };
  if (deps.objects === undefined) return { result: truncatedResult(json) };
  const sha256 = payloadSha256(json);
  const key = resultObjectKey(record, sha256);
  try {
    await deps.objects.put(key, encoded.bytes, encoded.encoding);
  } catch (error) {
    // Logged as a class and a code only: never the key's values, never the result.
    logger.error('result not stored', {
      tool_name: record.tool,
      outcome_code: 'result_not_stored',
      error_class: errorClass(error),
    });
    return { result: 'null', result_unavailable: { code: 'result_not_stored', size, sha256 } };
  }
  return { result_ref: { at: 'object', key, sha256, size, encoding: encoded.encoding } };
}

/**
 * Whether `record` holds the result `json`: its text, or a reference or evidence with its SHA-256.
 * How a commit recognises its own earlier write.
 */
export function holdsResult(
  record: Pick<OperationRecord, 'result' | 'result_ref' | 'result_unavailable'>,
  json: string | undefined,
): boolean {
  if (json === undefined) return record.result === undefined && record.result_ref === undefined;
  if (record.result === json) return true;
  const sha256 = record.result_ref?.sha256 ?? record.result_unavailable?.sha256;
  if (sha256 !== undefined) return sha256 === payloadSha256(json);
  // Kept in the item, but cut to its size and digest (no object store, or too large).
  return record.result !== undefined && record.result === truncatedResult(json);
}

/**
 * `record` with its result loaded when it is kept in the object store, checked against the SHA-256
 * and size its record holds; the same record when there is nothing to load. Throws
 * {@link ResultUnavailableError} (`result_unavailable`) when the object is missing, altered or
 * unreadable, or the store does not answer: never a wrong result.
 *
 * @example
 * ```ts
 * return operationResponse(200, await loadResult(deps, record));
 * ```
 */
export async function loadResult<T extends OperationSnapshot>(
  deps: Pick<LedgerDeps, 'objects'>,
  record: T,
): Promise<T> {
  const ref = record.result_ref;
  if (ref === undefined || record.result !== undefined) return record;
  if (ref.at !== 'object' || deps.objects === undefined) {
    throw new ResultUnavailableError(
      'the operation’s result is kept in a store this deployment does not reach',
    );
  }
  let object: Awaited<ReturnType<NonNullable<LedgerDeps['objects']>['get']>>;
  try {
    object = await deps.objects.get(ref.key);
  } catch (error) {
    throw new ResultUnavailableError('the object store did not answer for the operation’s result', error);
  }
  if (object === undefined) throw new ResultUnavailableError('the operation’s stored result is missing');
  let text: string;
  try {
    text = decodePayload(object.bytes, ref.encoding, ref.size);
  } catch (error) {
    throw new ResultUnavailableError('the operation’s stored result does not decode', error);
  }
  if (payloadSize(text) !== ref.size || payloadSha256(text) !== ref.sha256) {
    throw new ResultUnavailableError('the operation’s stored result does not match its SHA-256');
  }
  return { ...record, result: text };
}

/**
 * A call's outcome with its record's result loaded ({@link loadResult}): what every front door
 * answers with.
 */
export async function loadedAnswer(
  deps: Pick<LedgerDeps, 'objects'>,
  outcome: SubmitResult,
): Promise<SubmitResult> {
  const record = await loadResult(deps, outcome.record);
  return record === outcome.record ? outcome : { ...outcome, record };
}
