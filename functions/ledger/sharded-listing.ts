import { LEDGER_TABLE } from '../contract/table';

/**
 * Newest first across the shards of one tenant's `unresolved` partitions. Each shard is read in its
 * own order (descending `unresolved_at`); the page is the newest of what the shards returned, but only
 * down to the oldest position any unfinished shard has reached, because a shard that stopped early
 * (its limit, or a filter that dropped what it read) may still hold newer records below it. The
 * cursor keeps one position per shard, so no record is skipped or shown twice.
 *
 * ```
 *  shard 0: 9 7 │ 4 …        positions after the page: shard 0 at 7, shard 1 at 6 (its last read),
 *  shard 1: 8 6 │ …          shard 2 done; records 4 and 5 wait for the next page
 *  shard 2: 5 ■              page: 9 8 7 6
 * ```
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

/** The index key attributes of an entry: what DynamoDB accepts as `ExclusiveStartKey`. */
export const LISTING_KEY_ATTRIBUTES = [
  LEDGER_TABLE.partitionKey.name,
  LEDGER_TABLE.sortKey.name,
  LEDGER_TABLE.indexes.unresolved.partitionKey.name,
  LEDGER_TABLE.indexes.unresolved.sortKey.name,
] as const;

/**
 * One merged page: at most `limit` entries, newest first, and the positions to continue from
 * (`undefined` when every shard is done).
 */
export async function mergeShards(
  positions: ShardPosition[],
  limit: number,
  query: ShardQuery,
): Promise<{ entries: Record<string, unknown>[]; positions: ShardPosition[] | undefined }> {
  const pages = await Promise.all(
    positions.map((p, shard) => (p === 'done' ? undefined : query(shard, p === 'start' ? undefined : p))),
  );
  // The oldest time every unfinished shard has certainly covered: below it, a shard may hold more.
  let floor = Number.NEGATIVE_INFINITY;
  for (const page of pages) {
    if (page?.lastKey) floor = Math.max(floor, Number(page.lastKey.unresolved_at));
  }
  const candidates = pages.flatMap((page, shard) =>
    (page?.entries ?? []).filter((e) => Number(e.unresolved_at) >= floor).map((entry) => ({ entry, shard })),
  );
  candidates.sort((a, b) => Number(b.entry.unresolved_at) - Number(a.entry.unresolved_at));
  const taken = candidates.slice(0, limit);
  const next = positions.map((p, shard): ShardPosition => {
    const page = pages[shard];
    if (page === undefined) return p;
    const mine = taken.filter((t) => t.shard === shard);
    if (mine.length === page.entries.length) return page.lastKey ?? 'done';
    const last = mine.at(-1)?.entry;
    return last ? keyOf(last) : p;
  });
  return {
    entries: taken.map((t) => t.entry),
    positions: next.every((p) => p === 'done') ? undefined : next,
  };
}

function keyOf(entry: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(LISTING_KEY_ATTRIBUTES.map((a) => [a, entry[a]]));
}
