import { LEDGER_TABLE, OPERATION_SK, TENANT_PATTERN } from '../contract/table';
import { MAX_OPERATION_ID_LENGTH } from '../domain/operation-id';
import { InvalidCursorError } from '../engine/operation-store';

/**
 * The opaque paging cursor of the GSI queries: base64url JSON of DynamoDB's `LastEvaluatedKey`. A
 * cursor comes back from the caller, so decoding it is parsing hostile input: it is accepted only if it
 * is exactly a key the query could have issued. Anything else would reach DynamoDB, whose
 * ValidationException (an empty key, a key over 2,048 bytes, a number out of range) would look like a
 * server fault, or would page through another tenant's partition.
 */

/** What a query's cursor must hold: its index partition value, its sort attribute, its tenant. */
export interface CursorShape {
  /** The index's partition attribute and the value this query reads (`unresolved_tenant: 'acme'`). */
  partition: { attribute: string; value: string };
  /** The index's sort attribute: an epoch-ms integer (`unresolved_at`, `attention_at`). */
  sortAttribute: string;
  /** When set, the item key must be one of this tenant's operations. */
  tenant?: string;
}

/**
 * Longest cursor accepted (characters). The largest key the queries issue is a 128-character tenant, a
 * 255-character operation ID, the index partition and a number: well under 1 KiB of JSON.
 */
export const MAX_CURSOR_LENGTH = 2048;

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const OPERATION_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_OPERATION_ID_LENGTH}}$`);

/**
 * Encodes a query's `LastEvaluatedKey` as a cursor.
 *
 * @example
 * ```ts
 * encodeCursor({ pk: 'acme#run-1', sk: 'op', unresolved_tenant: 'acme', unresolved_at: 1700000000000 });
 * ```
 */
export function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor into an `ExclusiveStartKey`, or throws {@link InvalidCursorError}: it must be
 * base64url JSON of an object with exactly `pk`, `sk`, the partition and the sort attribute, where
 * `pk` is `<tenant>#<operation ID>` (of `shape.tenant` when given), `sk` is the operation item's, the
 * partition value is this query's and the sort value is a non-negative safe integer.
 *
 * @example
 * ```ts
 * decodeCursor(cursor, { partition: { attribute: 'unresolved_tenant', value: 'acme' },
 *   sortAttribute: 'unresolved_at', tenant: 'acme' }); // { pk, sk, unresolved_tenant, unresolved_at }
 * ```
 */
export function decodeCursor(
  cursor: string | undefined,
  shape: CursorShape,
): Record<string, unknown> | undefined {
  if (cursor === undefined) return undefined;
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) {
    throw new InvalidCursorError();
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InvalidCursorError();
  const key = value as Record<string, unknown>;
  const expected = [
    LEDGER_TABLE.partitionKey.name,
    LEDGER_TABLE.sortKey.name,
    shape.partition.attribute,
    shape.sortAttribute,
  ];
  const keys = Object.keys(key);
  const sort = key[shape.sortAttribute];
  const valid =
    keys.length === expected.length &&
    expected.every((name) => Object.hasOwn(key, name)) &&
    isOperationPk(key.pk, shape.tenant) &&
    key.sk === OPERATION_SK &&
    key[shape.partition.attribute] === shape.partition.value &&
    typeof sort === 'number' &&
    Number.isSafeInteger(sort) &&
    sort >= 0;
  if (!valid) throw new InvalidCursorError();
  return key;
}

/** `<tenant>#<operation ID>`, as `operationKey` builds it; the tenant cannot contain `#`. */
function isOperationPk(pk: unknown, tenant: string | undefined): boolean {
  if (typeof pk !== 'string') return false;
  const at = pk.indexOf('#');
  if (at < 0) return false;
  const owner = pk.slice(0, at);
  if (!TENANT_PATTERN.test(owner) || (tenant !== undefined && owner !== tenant)) return false;
  return OPERATION_ID.test(pk.slice(at + 1));
}
