// Searching the reconciliation queue for the filters the API does not have (tool, age, attempt): the
// listing is read page after page with the API's own cursor until a page of matches is found, the
// queue ends, or a bounded number of entries has been read.

/** Largest page the API lists (`limit` 1–100). */
export const MAX_READ = 100;

/**
 * Reads the listing from `from` (an API cursor; undefined is the newest operation) and returns the
 * first `want` operations that `matches` accepts, newest first.
 *
 * Every page starts and ends on a cursor the API issued, never inside one of its pages: a read that
 * turns up more matches than the page still has room for is read again, from the same cursor, only
 * up to the last match it takes. So the next page, which starts at `next`, begins right after the
 * last operation shown; nothing is skipped between two pages and nothing is shown twice, even when
 * operations leave the queue while the operator pages through it.
 *
 * ```
 * from ──read 25──▶ 3 matches ──read 50──▶ 30 matches (want 22 more) ──re-read up to the 22nd──▶ next
 * ```
 *
 * Reads grow (twice the last, at most {@link MAX_READ}) while matches are sparse; without a filter of
 * its own (`matches` absent) each read asks for exactly the operations still wanted, so a page is one
 * request. The search stops early once `budget` entries were asked for: then `stoppedEarly` is true
 * and `next` is where a further search continues.
 *
 * @param {object} options
 * @param {(query: {state?: string, limit: number, cursor?: string}) => Promise<{operations: object[], next_cursor: string | null}>} options.list
 *   one page of the API's listing
 * @param {string} [options.state] the API's own state filter
 * @param {(op: object) => boolean} [options.matches] the console's filters; absent: every operation
 * @param {number} options.want operations wanted (1 or more)
 * @param {number} options.budget entries that may be read before the search stops early
 * @param {string} [options.from] the cursor to start from
 * @returns {Promise<{operations: object[], next: string | null, read: number, requests: number, stoppedEarly: boolean}>}
 *   `next` is null once the queue has ended; `read` counts the entries the API returned and passed
 *
 * @example
 * const found = await searchQueue({ list: api.listOperations, matches: (op) => op.tool === 'webhook.post', want: 25, budget: 1000 });
 */
export async function searchQueue({ list, state, matches, want, budget, from }) {
  const operations = [];
  let position = from;
  let asked = 0;
  let read = 0;
  let requests = 0;
  let size = want;
  const page = async (limit) => {
    requests += 1;
    return list({ state: state || undefined, limit, cursor: position });
  };
  while (operations.length < want && asked < budget) {
    const needed = want - operations.length;
    const limit = Math.max(1, Math.min(MAX_READ, budget - asked, matches ? size : needed));
    asked += limit;
    size = Math.min(MAX_READ, size * 2);
    let got = await page(limit);
    let hits = matches ? got.operations.filter(matches) : got.operations;
    // More matches than room: read again from the same cursor, up to the last match taken, so the
    // page ends on a cursor the API issued. Each re-read asks for fewer entries, so this ends.
    while (hits.length > needed) {
      const last = got.operations.indexOf(hits[needed - 1]);
      got = await page(last + 1);
      hits = matches ? got.operations.filter(matches) : got.operations;
    }
    operations.push(...hits);
    read += got.operations.length;
    if (!got.next_cursor) return { operations, next: null, read, requests, stoppedEarly: false };
    position = got.next_cursor;
  }
  return { operations, next: position ?? null, read, requests, stoppedEarly: operations.length < want };
}
