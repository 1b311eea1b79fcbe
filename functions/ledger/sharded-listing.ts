import { type IndexSchema, LEDGER_TABLE } from '../contract/table';

/**
 * Newest first across the shards of one tenant's partitions of a listing index (`unresolved` or
 * `operations`). Each shard is read in its own order (descending sort key); the page is the newest of
 * what the shards returned, but only down to the oldest position any unfinished shard has reached,
 * because a shard that stopped early (its limit, or a filter that dropped what it read) may still hold
 * newer records below it. The cursor keeps one position per shard, so no record is skipped or shown
 * twice.
 *
 * ```
 *  shard 0: 9 7 │ 4 …        positions after the page: shard 0 at 7, shard 1 at 6 (its last read),
 *  shard 1: 8 6 │ …          shard 2 done; records 4 and 5 wait for the next page
 *  shard 2: 5 ■              page: 9 8 7 6
 * ```
 *
 * A reader may also take fewer entries than were merged (it walks them and stops once its page is
 * full, when a match needs the item itself): {@link MergedRead.positionsAfter} gives the positions
 * after any prefix of the merge, so what was read but not walked is read again next time, never lost.
 */

/** One shard's position: not started, done, or the index key after which to continue. */
export type ShardPosition = 'start' | 'done' | Record<string, unknown>;

/** What one shard query returned: index entries (keys and projected attributes) and where it stopped. */
export interface ShardPage {
  entries: Record<string, unknown>[];
  lastKey: Record<string, unknown> | undefined;
}

/** Reads one page of one shard from a position (never called for a shard that is done). */
export type ShardQuery = (shard: number, from: Record<string, unknown> | undefined) => Promise<ShardPage>;

/** The index key attributes of an entry of `index`: what DynamoDB accepts as `ExclusiveStartKey`. */
export function listingKeyAttributes(index: IndexSchema): readonly string[] {
  return [
    LEDGER_TABLE.partitionKey.name,
    LEDGER_TABLE.sortKey.name,
    index.partitionKey.name,
    index.sortKey.name,
  ];
}

/** The key attributes of the `unresolved` index's entries. */
export const LISTING_KEY_ATTRIBUTES = listingKeyAttributes(LEDGER_TABLE.indexes.unresolved);

/** One merge of the shards' pages: the entries newest first, and the positions after any prefix of them. */
export interface MergedRead {
  /** Every entry that may be shown now, newest first. */
  entries: Record<string, unknown>[];
  /**
   * The positions to continue from once the first `taken` entries were consumed (`undefined` when
   * every shard is done).
   */
  positionsAfter(taken: number): ShardPosition[] | undefined;
}

/**
 * Reads one page of every unfinished shard and merges them, newest first, on `index`'s sort key.
 */
export async function readShards(
  positions: ShardPosition[],
  query: ShardQuery,
  index: IndexSchema = LEDGER_TABLE.indexes.unresolved,
): Promise<MergedRead> {
  const sortKey = index.sortKey.name;
  const keys = listingKeyAttributes(index);
  const pages = await Promise.all(
    positions.map((p, shard) => (p === 'done' ? undefined : query(shard, p === 'start' ? undefined : p))),
  );
  // The oldest time every unfinished shard has certainly covered: below it, a shard may hold more.
  let floor = Number.NEGATIVE_INFINITY;
  for (const page of pages) {
    if (page?.lastKey) floor = Math.max(floor, Number(page.lastKey[sortKey]));
  }
  const candidates = pages.flatMap((page, shard) =>
    (page?.entries ?? []).filter((e) => Number(e[sortKey]) >= floor).map((entry) => ({ entry, shard })),
  );
  candidates.sort((a, b) => Number(b.entry[sortKey]) - Number(a.entry[sortKey]));
  return {
    entries: candidates.map((c) => c.entry),
    positionsAfter(taken) {
      const consumed = candidates.slice(0, taken);
      const next = positions.map((p, shard): ShardPosition => {
        const page = pages[shard];
        if (page === undefined) return p;
        const mine = consumed.filter((t) => t.shard === shard);
        if (mine.length === page.entries.length) return page.lastKey ?? 'done';
        const last = mine.at(-1)?.entry;
        return last ? Object.fromEntries(keys.map((a) => [a, last[a]])) : p;
      });
      return next.every((p) => p === 'done') ? undefined : next;
    },
  };
}

/**
 * One merged page: at most `limit` entries, newest first, and the positions to continue from
 * (`undefined` when every shard is done).
 */
export async function mergeShards(
  positions: ShardPosition[],
  limit: number,
  query: ShardQuery,
  index: IndexSchema = LEDGER_TABLE.indexes.unresolved,
): Promise<{ entries: Record<string, unknown>[]; positions: ShardPosition[] | undefined }> {
  const read = await readShards(positions, query, index);
  const taken = Math.min(limit, read.entries.length);
  return { entries: read.entries.slice(0, taken), positions: read.positionsAfter(taken) };
}
