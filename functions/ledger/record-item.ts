import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { convertToAttr, marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { RECORD_FORMAT } from '../contract/table';
import { LedgerUnavailableError } from '../domain/errors';
import type { HistoryEntry, OperationRecord } from '../domain/operation';

/**
 * How a record is stored as a DynamoDB item. The store talks to the low-level client and marshals
 * here with util-dynamodb (the document client's extra middleware cost every request for a
 * conversion the store can do once).
 *
 * Each history entry is stored as its JSON text, an element of a list of strings: a map per entry
 * costs every write (the SDK's serializer and DynamoDB's validation walk it attribute by attribute)
 * for a field the ledger only ever appends to and shows. Items written before, with a map per entry,
 * read as they are, also when newer entries (text) were appended after the old ones.
 */

/**
 * DynamoDB's attribute values of a plain object. Undefined values are left out (an absent attribute),
 * as the record's optional fields are; class instances are refused rather than stored as maps.
 *
 * @example
 * ```ts
 * toAttributes({ pk: 'acme#run-42', sk: 'op' }); // { pk: { S: 'acme#run-42' }, sk: { S: 'op' } }
 * ```
 */
export function toAttributes(value: object): Record<string, AttributeValue> {
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return marshall(value, MARSHALL_OPTIONS);
  // A record's attributes are mostly strings, safe numbers and lists of strings (its history): those
  // are converted here, exactly as util-dynamodb converts them, without its generic type tests (a
  // twentieth of a first execution's client time); everything else goes through util-dynamodb.
  const out: Record<string, AttributeValue> = {};
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'string') out[key] = { S: v };
    else if (typeof v === 'number' && v <= Number.MAX_SAFE_INTEGER && v >= Number.MIN_SAFE_INTEGER)
      out[key] = { N: String(v) };
    else if (v !== undefined && typeof v !== 'function')
      out[key] = listOfStrings(v) ?? convertToAttr(v, MARSHALL_OPTIONS);
  }
  return out;
}

/** Undefined values are left out; class instances are refused rather than stored as maps. */
const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** The list attribute of an array of strings only; anything else is left to util-dynamodb. */
function listOfStrings(value: unknown): AttributeValue | undefined {
  if (!Array.isArray(value)) return undefined;
  const list: AttributeValue[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (typeof item !== 'string') return undefined;
    list[i] = { S: item };
  }
  return { L: list };
}

/**
 * A plain object from DynamoDB's attribute values (numbers as JavaScript numbers).
 *
 * @example
 * ```ts
 * fromAttributes<{ n: number }>({ n: { N: '1' } }); // { n: 1 }
 * ```
 */
export function fromAttributes<T>(item: Record<string, AttributeValue>): T {
  return unmarshall(item) as T;
}

/**
 * The stored form of one history entry: its JSON text.
 *
 * @example
 * ```ts
 * historyText({ at, from: 'pending', to: 'succeeded', attempt: 1, by: 'w-1/…' }); // '{"at":…}'
 * ```
 */
export function historyText(entry: HistoryEntry): string {
  return JSON.stringify(entry);
}

/**
 * The item of a record, history entries as text.
 *
 * @example
 * ```ts
 * await client.send(new PutItemCommand({ TableName, Item: toItem(record) }));
 * ```
 */
export function toItem(record: OperationRecord): Record<string, AttributeValue> {
  if (record.history === undefined) return toAttributes(record);
  return toAttributes({ ...record, history: record.history.map(historyText) });
}

/**
 * The record of an item. A history entry stored as text is parsed; one stored as a map (an item written
 * before entries were stored as text) is taken as it is.
 *
 * @example
 * ```ts
 * const record = out.Item ? fromItem(out.Item) : undefined;
 * ```
 */
export function fromItem(item: Record<string, AttributeValue>): OperationRecord {
  const record = unmarshall(item) as OperationRecord;
  if ((record.record_format ?? 1) > RECORD_FORMAT) {
    // Written by a newer release: misreading it could repeat an effect; refuse, nothing is decided.
    throw new LedgerUnavailableError(
      `record format ${record.record_format} is newer than this release reads (${RECORD_FORMAT})`,
    );
  }
  const history = record.history as unknown[] | undefined;
  if (history !== undefined) {
    record.history = history.map((entry) =>
      typeof entry === 'string' ? (JSON.parse(entry) as HistoryEntry) : (entry as HistoryEntry),
    );
  }
  return record;
}
