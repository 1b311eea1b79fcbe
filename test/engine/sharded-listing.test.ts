import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { ValidationError } from '../../functions/domain/errors';
import { listOperations, MAX_PAGES_PER_LISTING } from '../../functions/engine/read-operations';
import { mergeShards, type ShardPosition, type ShardQuery } from '../../functions/ledger/sharded-listing';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

const db = useDynalite();
let ledger: TestLedger;
/** Every operation of tenant acme, newest first, with the state it was left in. */
const expected: { id: string; state: string }[] = [];

beforeAll(async () => {
  const tool = new ScriptedTool('test.t');
  ledger = testLedger(db.client, await freshTable(db.client), [tool.tool], { unresolvedShards: 4 });
  for (let n = 0; n < 23; n++) {
    const id = `op-${String(n).padStart(2, '0')}`;
    const queued = n % 3 === 0;
    if (!queued) tool.next({ kind: 'uncertain', code: 'http_503' });
    const out = await ledger.submit({
      operationId: id,
      arguments: { target: String(n) },
      mode: queued ? 'async' : 'sync',
    });
    expected.unshift({ id, state: out.record.state });
    ledger.advance(5); // distinct creation times, so "newest first" has one answer
  }
  tool.next({ kind: 'succeed' });
  await ledger.submit({ operationId: 'done', arguments: { target: 'done' } }); // terminal: listed with any state
});
async function readAll(options: {
  state?: string;
  tool?: string;
  since?: string;
  until?: string;
  limit: number;
}): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await listOperations(ledger.deps, ledger.req(), 'acme', { ...options, cursor });
    expect(page.items.length).toBeLessThanOrEqual(options.limit);
    ids.push(...page.items.map((r) => r.operation_id));
    cursor = page.cursor;
    pages += 1;
  } while (cursor !== undefined);
  return { ids, pages };
}

describe('the operators’ listing over a tenant’s unresolved shards', () => {
  it('a filtered listing that matches nothing reads a bounded number of pages per request, and the cursor still reaches the end', async () => {
    const store = ledger.deps.store;
    const original = store.listTenant.bind(store);
    let reads = 0;
    store.listTenant = (...args: Parameters<typeof original>) => {
      reads += 1;
      return original(...args);
    };
    try {
      const first = await listOperations(ledger.deps, ledger.req(), 'acme', {
        state: 'needs_reconciliation',
        limit: 1,
      });
      expect(reads).toBe(MAX_PAGES_PER_LISTING);
      expect(first.items).toEqual([]);
      expect(first.cursor).toBeDefined();
      const all = await readAll({ state: 'needs_reconciliation', limit: 1 });
      expect(all.ids).toEqual([]);
      expect(all.pages).toBeGreaterThan(1);
    } finally {
      store.listTenant = original;
    }
  });

  it('spreads one tenant’s entries over its shards', async () => {
    const partitions = new Set<string>();
    for (const { id } of expected) {
      partitions.add(String((await ledger.store.get(operationKey('acme', id)))?.unresolved_tenant));
    }
    expect([...partitions].sort()).toEqual(['acme', 'acme#1', 'acme#2', 'acme#3']);
  });

  it('pages newest first across the shards, every unresolved operation once, terminal ones never', async () => {
    expect(new Set(expected.map((e) => e.state))).toEqual(new Set(['queued', 'uncertain']));
    for (const limit of [1, 4, 7, 100]) {
      const { ids } = await readAll({ limit });
      expect(ids).toEqual(expected.map((e) => e.id));
    }
  });

  it('with every state, reads the operations index: terminal ones too, every operation once, newest first', async () => {
    const all = ['done', ...expected.map((e) => e.id)];
    for (const limit of [1, 5, 100]) {
      expect((await readAll({ state: 'all', limit })).ids).toEqual(all);
    }
    expect((await readAll({ state: 'succeeded', limit: 2 })).ids).toEqual(['done']);
    expect((await readAll({ state: 'succeeded,queued', limit: 2 })).ids).toEqual([
      'done',
      ...expected.filter((e) => e.state === 'queued').map((e) => e.id),
    ]);
    expect((await readAll({ state: 'all', tool: 'test.other', limit: 5 })).ids).toEqual([]);
    expect((await readAll({ state: 'all', tool: 'test.t', limit: 5 })).ids).toEqual(all);
  });

  it('a creation window is the key condition: only what was created inside it, across pages', async () => {
    const records = await Promise.all(expected.map((e) => ledger.store.get(operationKey('acme', e.id))));
    const times = records.map((r) => Date.parse(String(r?.created_at)));
    // expected is newest first: take the 5th to the 15th newest.
    const since = new Date(times[14] as number).toISOString();
    const until = new Date(times[4] as number).toISOString();
    const { ids } = await readAll({ state: 'all', since, until, limit: 3 });
    expect(ids).toEqual(expected.slice(5, 15).map((e) => e.id));
    // A cursor of one window is refused under another (it would name a key outside the condition).
    const page = await listOperations(ledger.deps, ledger.req(), 'acme', {
      state: 'all',
      since,
      until,
      limit: 3,
    });
    await expect(
      listOperations(ledger.deps, ledger.req(), 'acme', {
        state: 'all',
        since: new Date((times[4] as number) + 1).toISOString(),
        limit: 3,
        cursor: page.cursor,
      }),
    ).rejects.toThrow(ValidationError);
  });

  it('filters by state without losing the order', async () => {
    const { ids } = await readAll({ state: 'queued', limit: 3 });
    expect(ids).toEqual(expected.filter((e) => e.state === 'queued').map((e) => e.id));
  });

  it('refuses a cursor it did not issue: another tenant’s, a single-shard one, a reshaped one', async () => {
    const page = await listOperations(ledger.deps, ledger.req(), 'acme', { limit: 2 });
    const cursor = page.cursor as string;
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { shards: unknown[] };
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forged = [
      encode({ shards: decoded.shards.slice(1) }),
      encode({ ...decoded, extra: 1 }),
      encode({
        shards: decoded.shards.map((p) =>
          typeof p === 'object' ? { ...p, unresolved_tenant: 'globex' } : p,
        ),
      }),
      encode({ pk: 'acme#op-01', sk: 'op', unresolved_tenant: 'acme', unresolved_at: 1 }),
      'not-a-cursor!',
    ];
    for (const bad of forged) {
      await expect(
        listOperations(ledger.deps, ledger.req(), 'acme', { limit: 2, cursor: bad }),
      ).rejects.toThrow(ValidationError);
    }
    await expect(listOperations(ledger.deps, ledger.req(), 'globex', { limit: 2, cursor })).rejects.toThrow(
      ValidationError,
    );
  });
});

describe('mergeShards (the merge alone, against shards kept in memory)', () => {
  /** A shard as DynamoDB pages it: `limit` entries evaluated per query, the filter applied after. */
  function memoryShards(shards: number[][], keep: (at: number) => boolean, limit: number): ShardQuery {
    return async (shard, from) => {
      const all = (shards[shard] ?? []).slice().sort((a, b) => b - a);
      const start = from === undefined ? 0 : all.indexOf(Number(from.unresolved_at)) + 1;
      const evaluated = all.slice(start, start + limit);
      const entry = (at: number) => ({
        pk: `t#${shard}-${at}`,
        sk: 'op',
        unresolved_tenant: `t#${shard}`,
        unresolved_at: at,
      });
      const last = evaluated.at(-1);
      return {
        entries: evaluated.filter(keep).map(entry),
        lastKey: start + limit < all.length && last !== undefined ? entry(last) : undefined,
      };
    };
  }

  it('pages every entry once, newest first, whatever the spread, the page size and the filter', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 10_000 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 1, max: 4 }),
        async (times, shardCount, limit, modulo) => {
          const shards = Array.from({ length: shardCount }, () => [] as number[]);
          for (const [i, at] of times.entries()) shards[(at * 7 + i) % shardCount]?.push(at);
          const keep = (at: number) => at % modulo === 0;
          const query = memoryShards(shards, keep, limit);
          const seen: number[] = [];
          let positions: ShardPosition[] | undefined = shards.map(() => 'start');
          for (let pages = 0; positions !== undefined; pages++) {
            expect(pages).toBeLessThan(1_000);
            const page = await mergeShards(positions, limit, query);
            expect(page.entries.length).toBeLessThanOrEqual(limit);
            seen.push(...page.entries.map((e) => Number(e.unresolved_at)));
            positions = page.positions;
          }
          expect(seen).toEqual(times.filter(keep).sort((a, b) => b - a));
        },
      ),
      { numRuns: 200 },
    );
  });
});
