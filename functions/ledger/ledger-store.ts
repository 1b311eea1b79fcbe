import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  type DynamoDBServiceException,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  type ScanCommandOutput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { CompletionEvent } from '../contract/completion-event';
import { unresolvedPartitions } from '../contract/index-shards';
import { type IndexSchema, LEDGER_TABLE } from '../contract/table';
import { LedgerUnavailableError } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import { assertTransition, type OperationState, type TransitionName } from '../domain/states';
import {
  InvalidCursorError,
  type ItemKey,
  type LateOutcomeExpectation,
  type ListingPage,
  type ListingQuery,
  type OpenOperations,
  type OperationStore,
  type Page,
  type ReserveResult,
  type TransitionWrite,
  type WriteResult,
} from '../engine/operation-store';
import type { ReadCache } from '../engine/read-cache';
import { traceAwsClient } from '../observability/aws-client-spans';
import { decodeCursor, encodeCursor } from './cursor';
import { fromAttributes, fromItem, toAttributes, toItem } from './record-item';
import { readShards, type ShardPosition } from './sharded-listing';
import { transitionUpdate } from './transition-update';

const ATTENTION = LEDGER_TABLE.indexes.attention;
const UNRESOLVED = LEDGER_TABLE.indexes.unresolved;

/** Construction options for {@link LedgerStore}. */
export interface LedgerStoreOptions {
  /** A DynamoDB client (tests pass one pointing at dynalite). */
  client: DynamoDBClient;
  tableName: string;
  /**
   * Keep arguments and results brotli-compressed in the item when that makes them smaller (readers see
   * the same JSON either way). Off only to measure what compression saves (`npm run bench`).
   * @default true
   */
  compressPayloads?: boolean;
}

/**
 * The DynamoDB implementation of the engine's storage port ({@link OperationStore}): single-item conditional writes only (no transactions), so it runs the same on
 * DynamoDB and dynalite. Each method is one round trip, plus a consistent GetItem after a failed
 * condition where the store does not return the old item.
 *
 * The store is mechanism, not policy: the named transitions live in `engine/transitions.ts` and call
 * {@link LedgerStore.transition} with the condition they need; the store checks each write against
 * the state machine before sending it.
 *
 * @example
 * ```ts
 * const store = new LedgerStore({ client: new DynamoDBClient({}), tableName: 'ledger' });
 * const rec = await store.get({ pk: 'acme#run-42', sk: 'op' });
 * ```
 */
export class LedgerStore implements OperationStore {
  readonly tableName: string;
  /** The DynamoDB client the store was built on. */
  readonly client: DynamoDBClient;
  /** Read-tool results, in items of their own in the same table (ledger/read-cache.ts). */
  readonly readCache: ReadCache;
  /** Whether arguments and results are compressed at rest where smaller. */
  readonly compressPayloads: boolean;

  constructor(options: LedgerStoreOptions) {
    this.tableName = options.tableName;
    this.client = options.client;
    this.compressPayloads = options.compressPayloads ?? true;
    // A client span per DynamoDB call (a no-op without a tracing SDK).
    traceAwsClient(options.client, 'DynamoDB');
    this.readCache = lazyReadCache(options.client, options.tableName);
  }

  /** Reads one record with a strongly consistent read. */
  async get(key: ItemKey): Promise<OperationRecord | undefined> {
    const out = await call(() =>
      this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: toAttributes(key), ConsistentRead: true }),
      ),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  /**
   * Reserves an operation with one conditional PutItem: it succeeds only when no record exists or the
   * existing one is terminal and expired (`expires_at < now`). On failure it returns the existing
   * record, from the error where DynamoDB sends it (`ReturnValuesOnConditionCheckFailure`), else from a
   * consistent GetItem.
   *
   * ```
   *  PutItem(item) IF attribute_not_exists(pk) OR expires_at < :now
   *    ok ─────────────▶ created
   *    condition failed ▶ old item (from the error, or GetItem) ▶ caller decides
   * ```
   */
  async reserve(item: OperationRecord, nowSeconds: number): Promise<ReserveResult> {
    const transition: TransitionName =
      item.state === 'pending'
        ? 'reserve_pending'
        : item.state === 'queued'
          ? 'reserve_queued'
          : 'reserve_awaiting_approval';
    assertTransition(transition, [null], item.state);
    try {
      await call(() =>
        this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: toItem(item, this.compressPayloads),
            ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
            ExpressionAttributeValues: { ':now': { N: String(nowSeconds) } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      return { created: true };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const old = error.Item ? fromItem(error.Item) : await this.get({ pk: item.pk, sk: item.sk });
      return { created: false, existing: old };
    }
  }

  /**
   * One conditional UpdateItem that performs a named transition on `record`, the record as its caller
   * read it (the update and its condition: ledger/transition-update.ts). The condition names the state
   * it was read in (exactly that one) and, where given, attempt, lease owner, digest, reservation and
   * attention time. On a failed condition the current record is read and returned: a write never
   * overwrites what it did not expect.
   *
   * On success the new record is `record` with the write applied, built locally rather than asked
   * back (no `ALL_NEW`: a smaller answer for DynamoDB to build and for the SDK to parse). It is exact in
   * every attribute a transition governs: the record is still in the state it was read in, and at one
   * attempt no state comes back, so no transition happened in between; every transition sets or
   * removes the attention and index attributes itself. What another writer may have changed meanwhile
   * without a transition is a `late_outcome` annotation (also missing from a terminal record cached
   * before it landed), or the reconciler's `attention_at`, `requeue_count` and `reconcile_checks`
   * bookkeeping, which no caller reads from a write's result; a later write conditioned on a stale value
   * fails its condition and reads the record afresh, it never overwrites.
   *
   * ```
   *  UpdateItem(SET …, REMOVE …) IF state = s ∧ attempt = n ∧ …
   *    ok ─────────────▶ record ⊕ write (no read-back)
   *    condition failed ▶ current item (from the error, or GetItem) ▶ caller decides
   * ```
   */
  async transition(record: OperationRecord, write: TransitionWrite): Promise<WriteResult> {
    const { update, condition, names, values, next } = transitionUpdate(record, write, this.compressPayloads);
    const key = { pk: record.pk, sk: record.sk };
    try {
      await call(() =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: toAttributes(key),
            UpdateExpression: update,
            ConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: toAttributes(values),
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      return { ok: true, record: next };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item ? fromItem(error.Item) : await this.get(key);
      return { ok: false, current };
    }
  }

  async clearUnsentEvent(key: ItemKey, eventId: string): Promise<void> {
    try {
      await call(() =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: toAttributes(key),
            UpdateExpression: 'REMOVE unsent_events.#id',
            // A missing map or key would make the path invalid: the condition turns that into a no-op.
            ConditionExpression: 'attribute_exists(unsent_events.#id)',
            ExpressionAttributeNames: { '#id': eventId },
          }),
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /**
   * The records that still hold unsent completion events, a page at a time (a Scan: local mode reads
   * them once at its start, from a ledger of one machine's size).
   *
   * @example
   * ```ts
   * for await (const { key, events } of store.unsentEvents()) await sink.publish(events);
   * ```
   */
  async *unsentEvents(): AsyncGenerator<{ key: ItemKey; events: CompletionEvent[] }> {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out: ScanCommandOutput = await call(() =>
        this.client.send(
          new ScanCommand({
            TableName: this.tableName,
            FilterExpression: 'attribute_exists(unsent_events)',
            ProjectionExpression: 'pk, sk, unsent_events',
            ExclusiveStartKey: start,
          }),
        ),
      );
      for (const item of out.Items ?? []) {
        const { pk, sk, unsent_events } = fromAttributes(item) as {
          pk: string;
          sk: string;
          unsent_events?: Record<string, CompletionEvent>;
        };
        const events = Object.values(unsent_events ?? {});
        if (events.length > 0) yield { key: { pk, sk }, events };
      }
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
  }

  /**
   * Annotates a record with a late outcome of a superseded attempt. It touches only `late_outcome`:
   * state, result and expiry stay as they are, so a terminal record keeps its outcome. The write is
   * bound to the state it was read in and to the attempt's reservation, like every decision: it never
   * lands on a record that moved since, nor on a new operation that reused the expired key.
   */
  async annotateLateOutcome(
    key: ItemKey,
    expect: LateOutcomeExpectation,
    lateOutcome: OperationRecord['late_outcome'],
  ): Promise<WriteResult> {
    try {
      const out = await call(() =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: toAttributes(key),
            UpdateExpression: 'SET late_outcome = :lo',
            ConditionExpression: `attribute_exists(${LEDGER_TABLE.partitionKey.name}) AND #state = :state AND reservation_id = :rid AND attempt > :n`,
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: toAttributes({
              ':lo': lateOutcome,
              ':state': expect.state,
              ':rid': expect.reservationId,
              ':n': expect.supersededAttempt,
            }),
            // A rare path: the record as written comes back rather than being built here.
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      return { ok: true, record: fromItem(out.Attributes ?? {}) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item ? fromItem(error.Item) : await this.get(key);
      return { ok: false, current };
    }
  }

  /**
   * One page of the attention GSI for a shard: records whose `attention_at` is at or before `dueBy`,
   * oldest first. Cost grows with the unresolved records, never with the table. The index holds keys
   * only, so the page's items are then read whole with one consistent BatchGetItem; a record that
   * left the reconciler's view (or is no longer due) in between is dropped.
   */
  async queryAttention(shard: string, dueBy: number, limit: number, cursor?: string): Promise<Page> {
    const out = await this.query({
      TableName: this.tableName,
      IndexName: ATTENTION.name,
      KeyConditionExpression: `${ATTENTION.partitionKey.name} = :shard AND ${ATTENTION.sortKey.name} <= :due`,
      ExpressionAttributeValues: { ':shard': shard, ':due': dueBy },
      Limit: limit,
      ExclusiveStartKey: decodeCursor(cursor, {
        partition: { attribute: ATTENTION.partitionKey.name, value: shard },
        sortAttribute: ATTENTION.sortKey.name,
      }),
    });
    const items = (await this.fetchItems(out.items)).filter(
      (r) => r.attention_shard === shard && r.attention_at !== undefined && r.attention_at <= dueBy,
    );
    return { items, cursor: out.lastKey ? encodeCursor(out.lastKey) : undefined };
  }

  /**
   * One page of one tenant's records that are due (`attention_at <= dueBy`), through the tenant's
   * unresolved index: a pass an operator asks for reads its own tenant's records and no one else's.
   * Its cost grows with the tenant's unresolved records (the filter runs after the read). With the
   * tenant's entries spread over `shards` partitions, the cursor names the partition it is in
   * (`<n>.<key cursor>`), so one pass reads them one after another.
   */
  async queryTenantAttention(
    tenant: string,
    dueBy: number,
    limit: number,
    cursor?: string,
    shards = 1,
  ): Promise<Page> {
    const partitions = unresolvedPartitions(tenant, shards);
    let shard = 0;
    let keyCursor = cursor;
    if (cursor !== undefined && shards > 1) {
      const match = /^(\d{1,3})\.([A-Za-z0-9_-]*)$/.exec(cursor);
      shard = match ? Number(match[1]) : -1;
      if (!match || shard >= partitions.length) throw new InvalidCursorError();
      keyCursor = match[2] === '' ? undefined : match[2];
    }
    const partition = partitions[shard] as string;
    const out = await this.query({
      TableName: this.tableName,
      IndexName: UNRESOLVED.name,
      KeyConditionExpression: `${UNRESOLVED.partitionKey.name} = :tenant`,
      FilterExpression: `${ATTENTION.sortKey.name} <= :due`,
      ExpressionAttributeValues: { ':tenant': partition, ':due': dueBy },
      Limit: limit,
      ExclusiveStartKey: decodeCursor(keyCursor, {
        partition: { attribute: UNRESOLVED.partitionKey.name, value: partition },
        sortAttribute: UNRESOLVED.sortKey.name,
        tenant,
      }),
    });
    const items = (await this.fetchItems(out.items)).filter(
      (r) => r.tenant === tenant && r.attention_at !== undefined && r.attention_at <= dueBy,
    );
    const next = out.lastKey ? encodeCursor(out.lastKey) : undefined;
    if (shards <= 1) return { items, cursor: next };
    if (next !== undefined) return { items, cursor: `${shard}.${next}` };
    return { items, cursor: shard + 1 < partitions.length ? `${shard + 1}.` : undefined };
  }

  /**
   * One page of a tenant's unresolved records, newest first, optionally of one state: the
   * reconciliation queue ({@link LedgerStore.listTenant} on `unresolved`).
   */
  async listUnresolved(
    tenant: string,
    options: { state?: OperationState; limit: number; cursor?: string; shards?: number },
  ): Promise<Page> {
    const { items, cursor } = await this.listTenant(tenant, {
      index: 'unresolved',
      limit: options.limit,
      ...(options.state === undefined ? {} : { states: [options.state] }),
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      ...(options.shards === undefined ? {} : { shards: options.shards }),
    });
    return { items, cursor };
  }

  /**
   * One page of a tenant's listing, newest first, through `unresolved` (the reconciliation queue) or
   * `operations` (every operation). The creation window is the key condition; a filter on what the
   * index projects (the state on `unresolved`, the tool on `operations`) runs in DynamoDB, anything
   * else on the items, which are read with consistent BatchGetItem reads in the index's order and
   * walked until the page is full. The cursor is the position after the last entry walked (one per
   * shard when the tenant's entries are spread over `shards` partitions), so an entry read but not
   * walked is read again by the next page, never skipped. A record that left the index in between
   * (resolved, or replaced by a new reservation of an expired key) is dropped.
   */
  async listTenant(tenant: string, query: ListingQuery): Promise<ListingPage> {
    const index = LEDGER_TABLE.indexes[query.index];
    const projected = index.projection.type === 'INCLUDE' ? index.projection.attributes : [];
    const shards = query.shards ?? 1;
    const partitions = unresolvedPartitions(tenant, shards);
    const states = query.states;
    const byState = states !== undefined && projected.includes('state');
    const byTool = query.tool !== undefined && projected.includes('tool');
    const onItems = (states !== undefined && !byState) || (query.tool !== undefined && !byTool);
    const perShard = onItems ? Math.max(query.limit, query.read ?? query.limit) : query.limit;
    const from = query.since ?? 0;
    const to = query.until === undefined ? undefined : query.until - 1;
    const window = query.since !== undefined || query.until !== undefined;

    const queryShard = async (shard: number, start: Record<string, unknown> | undefined) => {
      const values: Record<string, unknown> = { ':tenant': partitions[shard] };
      const names: Record<string, string> = {};
      let keyCondition = `${index.partitionKey.name} = :tenant`;
      if (window) {
        keyCondition += ` AND ${index.sortKey.name} BETWEEN :from AND :to`;
        values[':from'] = from;
        values[':to'] = to ?? Number.MAX_SAFE_INTEGER;
      }
      const filters: string[] = [];
      if (byState && states) {
        names['#state'] = 'state';
        filters.push(`#state IN (${states.map((_, i) => `:s${i}`).join(', ')})`);
        states.forEach((state, i) => {
          values[`:s${i}`] = state;
        });
      }
      if (byTool) {
        names['#tool'] = 'tool';
        filters.push('#tool = :tool');
        values[':tool'] = query.tool;
      }
      const input: PlainQuery = {
        TableName: this.tableName,
        IndexName: index.name,
        KeyConditionExpression: keyCondition,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: perShard,
        ExclusiveStartKey: start,
      };
      if (filters.length > 0) {
        input.FilterExpression = filters.join(' AND ');
        input.ExpressionAttributeNames = names;
      }
      const out = await this.query(input);
      return { entries: out.items, lastKey: out.lastKey };
    };

    const inWindow = (key: Record<string, unknown>) => {
      const at = Number(key[index.sortKey.name]);
      return at >= from && (to === undefined || at <= to);
    };
    const positions: ShardPosition[] =
      shards <= 1
        ? [singleShardPosition(query.cursor, index, tenant, inWindow)]
        : decodeShardedCursor(query.cursor, partitions, tenant, index, inWindow);
    const merged = await readShards(positions, queryShard, index);

    const matches = (record: OperationRecord) =>
      record[index.partitionKey.name as keyof OperationRecord] !== undefined &&
      (states === undefined || states.includes(record.state)) &&
      (query.tool === undefined || record.tool === query.tool) &&
      (query.accept === undefined || query.accept(record));
    const items: OperationRecord[] = [];
    let walked = 0;
    while (walked < merged.entries.length && items.length < query.limit) {
      // Without a filter on the items nearly every entry is a record of the page: read what fills it.
      const chunk = merged.entries.slice(walked, walked + (onItems ? 100 : query.limit - items.length));
      const records = await this.fetchItems(chunk);
      const byKey = new Map(records.map((r) => [`${r.pk}\u0000${r.sk}`, r]));
      for (const entry of chunk) {
        walked += 1;
        const record = byKey.get(`${String(entry.pk)}\u0000${String(entry.sk)}`);
        if (record && isSameEntry(record, entry, index) && matches(record)) items.push(record);
        if (items.length >= query.limit) break;
      }
    }
    const next = merged.positionsAfter(walked);
    let cursor: string | undefined;
    if (next !== undefined) {
      const only = next[0];
      cursor =
        shards <= 1
          ? only && typeof only === 'object'
            ? encodeCursor(only)
            : undefined
          : encodeCursor({ shards: next });
    }
    return { items, cursor, examined: walked };
  }

  /**
   * Counts the unresolved records by scanning the sparse `unresolved` index, which holds them alone,
   * reading only `state`: the cost grows with the unresolved operations, never with the table (the contract, §7).
   */
  async countOpen(): Promise<OpenOperations> {
    const counts: OpenOperations = { unresolved: 0, needsReconciliation: 0 };
    let start: ScanCommandOutput['LastEvaluatedKey'];
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          IndexName: UNRESOLVED.name,
          ProjectionExpression: '#state',
          ExpressionAttributeNames: { '#state': 'state' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        counts.unresolved += 1;
        if (item.state?.S === 'needs_reconciliation') counts.needsReconciliation += 1;
      }
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return counts;
  }

  /** One Query, with plain values in and plain entries and key out. */
  private async query(
    input: PlainQuery,
  ): Promise<{ items: Record<string, unknown>[]; lastKey: Record<string, unknown> | undefined }> {
    const { ExpressionAttributeValues, ExclusiveStartKey, ...rest } = input;
    const out = await call(() =>
      this.client.send(
        new QueryCommand({
          ...rest,
          ExpressionAttributeValues: toAttributes(ExpressionAttributeValues),
          ...(ExclusiveStartKey === undefined ? {} : { ExclusiveStartKey: toAttributes(ExclusiveStartKey) }),
        }),
      ),
    );
    return {
      items: (out.Items ?? []).map((item) => fromAttributes<Record<string, unknown>>(item)),
      lastKey: out.LastEvaluatedKey
        ? fromAttributes<Record<string, unknown>>(out.LastEvaluatedKey)
        : undefined,
    };
  }

  /**
   * The whole items behind index entries, in the entries' order, with consistent BatchGetItem reads
   * (100 keys a request; unprocessed keys are asked again with backoff). An item gone in between is left out.
   */
  private async fetchItems(entries: readonly Record<string, unknown>[]): Promise<OperationRecord[]> {
    const found = new Map<string, OperationRecord>();
    for (let i = 0; i < entries.length; i += 100) {
      let keys: Record<string, AttributeValue>[] = entries
        .slice(i, i + 100)
        .map((e) => toAttributes({ pk: e.pk, sk: e.sk }));
      for (let round = 0; keys.length > 0; round++) {
        if (round >= 10) throw new LedgerUnavailableError('the ledger kept keys of a batch read unprocessed');
        // Unprocessed keys mean the table is throttling: back off before asking again.
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(25 * 2 ** round, 2_000)));
        const out = await call(() =>
          this.client.send(
            new BatchGetItemCommand({
              RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } },
            }),
          ),
        );
        for (const raw of out.Responses?.[this.tableName] ?? []) {
          const item = fromItem(raw);
          found.set(`${item.pk}\u0000${item.sk}`, item);
        }
        keys = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return entries.flatMap((e) => {
      const item = found.get(`${String(e.pk)}\u0000${String(e.sk)}`);
      return item ? [item] : [];
    });
  }
}

/** A Query whose values and start key are plain JavaScript values. */
type PlainQuery = Omit<QueryCommandInput, 'ExpressionAttributeValues' | 'ExclusiveStartKey'> & {
  ExpressionAttributeValues: Record<string, unknown>;
  ExclusiveStartKey?: Record<string, unknown> | undefined;
};

/**
 * Runs one SDK call. Conditional failures pass through for the caller to handle; every other service
 * or transport error (after the SDK's own retries with backoff) becomes `ledger_unavailable`, so the
 * caller knows no decision of this call is known to be durable.
 */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw error;
    if (isValidationException(error)) throw error;
    throw new LedgerUnavailableError('the ledger is unavailable or throttled', error);
  }
}

function isValidationException(error: unknown): boolean {
  return (error as DynamoDBServiceException | undefined)?.name === 'ValidationException';
}

/**
 * The position of a single-shard listing: its start, or the index key a cursor holds (checked by the
 * cursor codec: this index, this tenant, inside the query's creation window).
 */
function singleShardPosition(
  cursor: string | undefined,
  index: IndexSchema,
  tenant: string,
  inWindow: (key: Record<string, unknown>) => boolean,
): ShardPosition {
  const key = decodeCursor(cursor, {
    partition: { attribute: index.partitionKey.name, value: tenant },
    sortAttribute: index.sortKey.name,
    tenant,
  });
  if (key === undefined) return 'start';
  // DynamoDB refuses a start key outside the key condition; a cursor of another window is not ours.
  if (!inWindow(key)) throw new InvalidCursorError();
  return key;
}

/**
 * Decodes a cursor of a sharded listing: one position per shard of this tenant, each `start`, `done`
 * or an index key of that very shard in `index` (checked by the cursor codec as a single-shard key
 * is, and inside the query's window). Anything else is {@link InvalidCursorError}.
 */
function decodeShardedCursor(
  cursor: string | undefined,
  partitions: readonly string[],
  tenant: string,
  index: IndexSchema,
  inWindow: (key: Record<string, unknown>) => boolean,
): ShardPosition[] {
  if (cursor === undefined) return partitions.map(() => 'start');
  if (cursor.length > 16_384 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new InvalidCursorError();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  const shards = (value as { shards?: unknown } | null)?.shards;
  if (
    !value ||
    typeof value !== 'object' ||
    Object.keys(value).length !== 1 ||
    !Array.isArray(shards) ||
    shards.length !== partitions.length
  ) {
    throw new InvalidCursorError();
  }
  return shards.map((p: unknown, n): ShardPosition => {
    if (p === 'start' || p === 'done') return p;
    if (p === null || typeof p !== 'object' || Array.isArray(p)) throw new InvalidCursorError();
    const key = decodeCursor(encodeCursor(p as Record<string, unknown>), {
      partition: { attribute: index.partitionKey.name, value: partitions[n] as string },
      sortAttribute: index.sortKey.name,
      tenant,
    });
    if (key === undefined || !inWindow(key)) throw new InvalidCursorError();
    return key;
  });
}

/**
 * The record is still the one the index entry was written for: a record resolved in between has left
 * `unresolved`, and a key reused after expiry is a new reservation with a new creation time.
 */
function isSameEntry(record: OperationRecord, entry: Record<string, unknown>, index: IndexSchema): boolean {
  const field = (name: string) => (record as unknown as Record<string, unknown>)[name];
  return (
    field(index.partitionKey.name) === entry[index.partitionKey.name] &&
    field(index.sortKey.name) === entry[index.sortKey.name]
  );
}

/**
 * The Powertools read cache, loaded at the first read: Powertools idempotency and its JMESPath engine are
 * a sixth of a handler bundle, and a deployment whose tools only write never evaluates them (its cold
 * start does not pay for them).
 */
function lazyReadCache(client: DynamoDBClient, tableName: string): ReadCache {
  let cache: Promise<ReadCache> | undefined;
  return {
    async runOnce(key, options, read) {
      cache ??= import('./read-cache').then(
        ({ PowertoolsReadCache }) => new PowertoolsReadCache(client, tableName),
      );
      return (await cache).runOnce(key, options, read);
    },
  };
}
