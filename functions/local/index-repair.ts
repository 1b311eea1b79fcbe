import { isDeepStrictEqual } from 'node:util';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import dynaliteDb from 'dynalite/db/index.js';
import type { OperationRecord } from '../domain/operation';
import { isTerminal } from '../domain/states';
import { fromItem } from '../ledger/record-item';

/**
 * Crash consistency of local mode's indexes. dynalite writes an item and its index entries as separate
 * LevelDB writes, and in this order (dynalite 4, `db/index.js` `updateIndexes`, then the item):
 *
 * ```
 *  del old index entries ──▶ put new index entries ──▶ put the item ──▶ answer the client
 *        kill -9 here: the old item stands, its entries are gone      (its record left the indexes)
 *                         kill -9 here: entries show a state the item never reached   (stale entries)
 * ```
 *
 * The item is the truth (the client was answered only once it was written), so at start, before any
 * server listens, the indexes are rebuilt from the items: every entry an item should have is written
 * (when missing or different), every entry no item accounts for is deleted, in one LevelDB batch. A
 * crash during the repair leaves work for the next start, never a wrong answer. It reads the whole
 * table once: local mode's ledger is one developer's, and the repair runs only at start.
 */

/**
 * How dynalite 4 names its LevelDB key spaces (`getSubDb` in `db/index.js`): `table~<name>` holds a
 * table's description, `item-<table>~<key>` its items, `index-global~<table>~<index>~<key>` a GSI.
 */
const keySpace = {
  table: (table: string) => `table~${table}`,
  items: (table: string) => `item-${table}~`,
  index: (table: string, index: string) => `index-global~${table}~${index}~`,
};

/** What one repair found and did. */
export interface RepairReport {
  /** Items in the table. */
  records: number;
  /** Non-terminal records among them. */
  unresolved: number;
  /** Index entries written because they were missing. */
  missing: number;
  /** Index entries rewritten because they showed something other than their item. */
  stale: number;
  /** Index entries deleted because no item has them (any more). */
  orphaned: number;
  /** `queued` records: their work messages died with the in-memory queue, so they are sent again. */
  queued: OperationRecord[];
  durationMs: number;
}

/** The LevelDB folder is held by another process (LevelDB's own lock). */
export class LedgerLockedError extends Error {
  /** Stable code, for logs. */
  readonly code = 'ledger_locked';

  constructor(cause: unknown) {
    super('the ledger folder is open in another process', { cause });
    this.name = 'LedgerLockedError';
  }
}

/**
 * Checks and repairs the GSIs of `tableName` in the dynalite folder `path`. Must run while no dynalite
 * has the folder open (LevelDB allows one process; a second open throws {@link LedgerLockedError}). A
 * folder without the table (a first start) is left alone.
 *
 * @example
 * ```ts
 * const report = await repairIndexes('.data/ledger', 'tool-ledger');
 * console.log(report.missing, report.stale, report.orphaned);
 * ```
 */
export async function repairIndexes(path: string, tableName: string): Promise<RepairReport> {
  const started = performance.now();
  const store = dynaliteDb.create({ path });
  try {
    await store.db.open();
  } catch (error) {
    if (isLocked(error)) throw new LedgerLockedError(error);
    throw error;
  }
  try {
    return await repair(store.db, tableName, started);
  } finally {
    await store.db.close();
  }
}

async function repair(
  level: ReturnType<typeof dynaliteDb.create>['db'],
  tableName: string,
  started: number,
): Promise<RepairReport> {
  const report: RepairReport = {
    records: 0,
    unresolved: 0,
    missing: 0,
    stale: 0,
    orphaned: 0,
    queued: [],
    durationMs: 0,
  };
  const table = (await level.get(keySpace.table(tableName))) as
    | Parameters<typeof dynaliteDb.getIndexActions>[3]
    | undefined;
  const indexes = table?.GlobalSecondaryIndexes ?? [];
  if (!table || indexes.length === 0) {
    report.durationMs = performance.now() - started;
    return report;
  }

  // What the indexes should hold, computed by dynalite's own function from each item.
  const expected = new Map<string, Map<string, unknown>>(indexes.map((i) => [i.IndexName, new Map()]));
  for await (const [, value] of range(level, keySpace.items(tableName))) {
    const item = value as Parameters<typeof dynaliteDb.createKey>[0];
    report.records += 1;
    // fromItem, not unmarshall: arguments and results may be kept compressed (ledger/record-item.ts).
    const record = fromItem(storedAttributes(item as unknown as Record<string, AttributeValue>));
    if (!isTerminal(record.state)) report.unresolved += 1;
    if (record.state === 'queued') report.queued.push(record);
    for (const put of dynaliteDb.getIndexActions(indexes, null, item, table).puts) {
      // For a projection other than ALL dynalite builds the entry on a null prototype, with absent
      // attributes as undefined; stored entries come back as plain JSON. Compare (and write) that form.
      expected.get(put.index)?.set(put.key, JSON.parse(JSON.stringify(put.item)));
    }
  }

  const operations: Parameters<typeof level.batch>[0] = [];
  for (const index of indexes) {
    const prefix = keySpace.index(tableName, index.IndexName);
    const want = expected.get(index.IndexName) ?? new Map<string, unknown>();
    const seen = new Set<string>();
    for await (const [fullKey, value] of range(level, prefix)) {
      const key = fullKey.slice(prefix.length);
      seen.add(key);
      const should = want.get(key);
      if (should === undefined) {
        operations.push({ type: 'del', key: fullKey });
        report.orphaned += 1;
      } else if (!isDeepStrictEqual(should, value)) {
        operations.push({ type: 'put', key: fullKey, value: should });
        report.stale += 1;
      }
    }
    for (const [key, item] of want) {
      if (seen.has(key)) continue;
      operations.push({ type: 'put', key: `${prefix}${key}`, value: item });
      report.missing += 1;
    }
  }
  if (operations.length > 0) await level.batch(operations);
  report.durationMs = performance.now() - started;
  return report;
}

/** Every entry of one key space. `\xff` sorts after every character dynalite puts in a key. */
function range(
  level: ReturnType<typeof dynaliteDb.create>['db'],
  prefix: string,
): AsyncIterable<[string, unknown]> {
  return level.iterator({ gte: prefix, lt: `${prefix}\xff` });
}

function isLocked(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: string }).code === 'LEVEL_LOCKED') return true;
  }
  return false;
}

/**
 * An item as dynalite keeps it on disk, in the form the SDK would give it back: binary attributes (a
 * compressed payload) are base64 text there, bytes through the SDK.
 */
function storedAttributes(item: Record<string, AttributeValue>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = { ...item };
  for (const name of ['arguments', 'result']) {
    const value = out[name] as { B?: unknown } | undefined;
    if (typeof value?.B === 'string') out[name] = { B: Buffer.from(value.B, 'base64') };
  }
  return out;
}
