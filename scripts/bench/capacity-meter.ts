import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { LEDGER_INDEXES as TABLE_INDEXES } from '../../functions/contract/table';

/** Capacity units one side consumed during a measured span. */
export interface CapacityTally {
  /** Table write units, as the store reported them (`ReturnConsumedCapacity: TOTAL`). */
  tableWrites: number;
  /** Table read units, as reported (GetItem, BatchGetItem, Query). */
  reads: number;
  /** Index write units, per index, counted from each write's before and after image. */
  indexWrites: Record<string, number>;
}

/** A GSI as the meter sees it: its key attributes and the non-key attributes it projects. */
export interface MeteredIndex {
  name: string;
  keys: readonly string[];
  /** `undefined` for ALL, `[]` for KEYS_ONLY. */
  projected: readonly string[] | undefined;
}

/** The ledger table's GSIs as the contract (functions/contract/table.ts) declares them. */
export const LEDGER_INDEXES: MeteredIndex[] = TABLE_INDEXES.map((index) => ({
  name: index.name,
  keys: [index.partitionKey.name, index.sortKey.name],
  projected: index.projection.type === 'INCLUDE' ? index.projection.attributes : [],
}));

type Item = Record<string, AttributeValue>;
const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

/**
 * SDK middleware that measures capacity. It asks the store for the consumed capacity of every request
 * and adds it up. dynalite reports the table's units but has no GSIs of its own to report, so index
 * writes are counted the way DynamoDB charges them: the meter reads the item before and after each
 * write (with a separate client, not counted) and, per index, charges a put when the item enters the
 * index, a delete when it leaves, both when its index key changes, one update when only a projected
 * attribute changes, each ⌈projected size ÷ 1 KB⌉ units; a write that changes nothing the index holds
 * costs that index nothing. A write whose condition fails consumes ⌈item size ÷ 1 KB⌉ table units on
 * DynamoDB (at least 1); dynalite reports none with the error, so the meter charges that.
 */
export class CapacityMeter {
  private tally = emptyCapacity();

  constructor(
    client: DynamoDBClient,
    private readonly snapshot: DynamoDBClient,
    private readonly keyAttributes: readonly string[],
    private readonly indexes: readonly MeteredIndex[],
  ) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = (context as { commandName?: string }).commandName ?? 'unknown';
        const input = (args as { input: Record<string, unknown> }).input;
        input.ReturnConsumedCapacity = 'TOTAL';
        const table = String(input.TableName ?? '');
        const key = WRITES.has(name) ? this.keyOf(name, input) : undefined;
        const before = key ? await this.read(table, key) : undefined;
        try {
          const out = await next(args);
          const output = out.output as { ConsumedCapacity?: unknown };
          const units = consumed(output.ConsumedCapacity);
          if (WRITES.has(name)) this.tally.tableWrites += units;
          else this.tally.reads += units;
          if (key) this.chargeIndexes(before, await this.read(table, key));
          return out;
        } catch (error) {
          if (key && (error as { name?: string }).name === 'ConditionalCheckFailedException') {
            this.tally.tableWrites += Math.max(1, Math.ceil(itemSize(before ?? {}) / 1024));
          }
          throw error;
        }
      },
      { step: 'initialize', priority: 'low', name: 'benchCapacityMeter' },
    );
  }

  /** What was measured since the last call; starts again from zero. */
  take(): CapacityTally {
    const out = this.tally;
    this.tally = emptyCapacity();
    return out;
  }

  private chargeIndexes(before: Item | undefined, after: Item | undefined): void {
    for (const index of this.indexes) {
      const was = before && index.keys.every((k) => k in before) ? this.entry(index, before) : undefined;
      const now = after && index.keys.every((k) => k in after) ? this.entry(index, after) : undefined;
      let units = 0;
      const size = (e: Item) => Math.max(1, Math.ceil(itemSize(e) / 1024));
      if (was && now) {
        const sameKey = index.keys.every((k) => JSON.stringify(was[k]) === JSON.stringify(now[k]));
        if (!sameKey) units = size(was) + size(now);
        else if (JSON.stringify(was) !== JSON.stringify(now)) units = size(now);
      } else if (was) units = size(was);
      else if (now) units = size(now);
      this.tally.indexWrites[index.name] = (this.tally.indexWrites[index.name] ?? 0) + units;
    }
  }

  private entry(index: MeteredIndex, item: Item): Item {
    if (index.projected === undefined) return item;
    const names = new Set([...this.keyAttributes, ...index.keys, ...index.projected]);
    return Object.fromEntries(
      Object.entries(item)
        .filter(([k]) => names.has(k))
        .sort(),
    );
  }

  private async read(table: string, key: Item): Promise<Item | undefined> {
    const out = await this.snapshot.send(
      new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
    );
    return out.Item;
  }

  private keyOf(command: string, input: Record<string, unknown>): Item | undefined {
    const source = (command === 'PutItemCommand' ? input.Item : input.Key) as Item | undefined;
    if (!source) return undefined;
    // The document client's input may not be marshalled yet at this step; keys are strings either way.
    return Object.fromEntries(
      this.keyAttributes.map((a) => {
        const v = source[a] as unknown;
        return [a, typeof v === 'string' ? { S: v } : (v as AttributeValue)];
      }),
    );
  }
}

/** A tally with nothing in it. */
export function emptyCapacity(): CapacityTally {
  return { tableWrites: 0, reads: 0, indexWrites: {} };
}

function consumed(value: unknown): number {
  const list = Array.isArray(value) ? value : value ? [value] : [];
  return list.reduce(
    (sum: number, c) => sum + Number((c as { CapacityUnits?: number }).CapacityUnits ?? 0),
    0,
  );
}

/**
 * An item's size as DynamoDB counts it: attribute names plus values (strings and binaries by their
 * bytes, numbers about one byte per two digits plus one, 3 bytes per list or map plus 1 per element).
 */
export function itemSize(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + valueSize(value),
    0,
  );
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined)
    return 3 + value.L.reduce((s: number, v: AttributeValue) => s + 1 + valueSize(v), 0);
  if (value.M !== undefined) return 3 + itemSize(value.M) + Object.keys(value.M).length;
  if (value.SS !== undefined) return value.SS.reduce((s: number, v: string) => s + Buffer.byteLength(v), 0);
  if (value.NS !== undefined) return value.NS.reduce((s: number, v: string) => s + v.length, 0);
  return 0;
}
