/** dynalite ships no types; this is the small surface tool-ledger uses. */
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export default dynalite;
}

/**
 * dynalite's storage layer (db/index.js): how it keeps tables, items and index entries in one LevelDB.
 * Local mode opens it before the server starts, to check and repair the indexes after a crash.
 */
declare module 'dynalite/db/index.js' {
  /** An attribute value map as DynamoDB's wire format has it (`{ S: 'x' }`, `{ N: '1' }`, …). */
  type WireItem = Record<string, Record<string, unknown>>;

  /** A table description as dynalite stores it (CreateTable's input plus status). */
  interface StoredTable {
    TableName: string;
    TableStatus: string;
    KeySchema: { AttributeName: string; KeyType: string }[];
    AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
    GlobalSecondaryIndexes?: {
      IndexName: string;
      KeySchema: { AttributeName: string; KeyType: string }[];
      Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
    }[];
  }

  /** The LevelDB handle (abstract-level's promise API; dynalite wraps a few methods with callbacks). */
  interface LevelHandle {
    open(): Promise<void>;
    close(): Promise<void>;
    get(key: string): Promise<unknown>;
    iterator(options: { gte: string; lt: string }): AsyncIterable<[string, unknown]>;
    batch(
      operations: ({ type: 'put'; key: string; value: unknown } | { type: 'del'; key: string })[],
    ): Promise<void>;
  }

  interface Store {
    db: LevelHandle;
  }

  interface IndexAction {
    index: string;
    key: string;
    item: WireItem;
  }

  const db: {
    create(options: { path?: string }): Store;
    createKey(item: WireItem, table: StoredTable): string;
    createIndexKey(item: WireItem, table: StoredTable, keySchema: StoredTable['KeySchema']): string;
    getIndexActions(
      indexes: NonNullable<StoredTable['GlobalSecondaryIndexes']>,
      existingItem: WireItem | null,
      item: WireItem | null,
      table: StoredTable,
    ): { puts: IndexAction[]; deletes: { index: string; key: string }[] };
  };
  export default db;
}
