import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { LEDGER_INDEXES, LEDGER_TABLE } from '../../functions/contract/table';
import type { OperationRecord } from '../../functions/domain/operation';
import { isTerminal } from '../../functions/domain/states';

const ATTENTION_INDEX = LEDGER_TABLE.indexes.attention.name;
const UNRESOLVED_INDEX = LEDGER_TABLE.indexes.unresolved.name;

/**
 * Every record of the ledger against the two indexes its readers use: the reconciler's `attention`
 * GSI and the operators' `unresolved` GSI. Read through the local DynamoDB endpoint, as any client
 * would; exact only while nothing writes (a settled ledger, or a folder no stack serves).
 */

/** Which attributes each index is keyed on. */
const INDEX_KEYS: Record<string, readonly (keyof OperationRecord)[]> = Object.fromEntries(
  LEDGER_INDEXES.map((index) => [
    index.name,
    [index.partitionKey.name, index.sortKey.name] as (keyof OperationRecord)[],
  ]),
);

/** The other attributes each index projects (what its entries can show wrongly). */
const INDEX_PROJECTED: Record<string, readonly string[]> = Object.fromEntries(
  LEDGER_INDEXES.map((index) => [
    index.name,
    index.projection.type === 'INCLUDE' ? index.projection.attributes : [],
  ]),
);

/** What an audit found; every count must be 0. */
export interface IndexAudit {
  records: number;
  /** Non-terminal records in the table. */
  unresolved: number;
  /**
   * Non-terminal records missing from an index that must show them: the operators' index always, the
   * reconciler's unless an operator has them (`needs_reconciliation`). Their operation IDs.
   */
  outsideIndexes: string[];
  /** Index entries whose record is gone, left that index, or is in another state. Their operation IDs. */
  staleEntries: string[];
}

/**
 * Scans the table and both indexes and compares them.
 *
 * @example
 * ```ts
 * const audit = await auditIndexes(stack.dynamodb, stack.table);
 * if (audit.outsideIndexes.length + audit.staleEntries.length > 0) throw new Error('indexes out of step');
 * ```
 */
export async function auditIndexes(endpoint: string, tableName: string): Promise<IndexAudit> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const records = await scan(client, tableName);
    const byPk = new Map(records.map((r) => [r.pk, r]));
    const audit: IndexAudit = {
      records: records.length,
      unresolved: 0,
      outsideIndexes: [],
      staleEntries: [],
    };
    // Per index, the keys of the records it shows faithfully.
    const shown = new Map<string, Set<string>>();
    for (const [index, keys] of Object.entries(INDEX_KEYS)) {
      const faithful = new Set<string>();
      shown.set(index, faithful);
      for (const row of await scan(client, tableName, index)) {
        const record = byPk.get(row.pk);
        // An entry is faithful when every attribute it holds (its keys and what the index projects)
        // is the record's: that is all a reader of the index can see.
        const projected = INDEX_PROJECTED[index] ?? [];
        const same =
          record !== undefined &&
          keys.every((k) => record[k] !== undefined && record[k] === row[k]) &&
          projected.every(
            (a) =>
              (record as unknown as Record<string, unknown>)[a] ===
              (row as unknown as Record<string, unknown>)[a],
          );
        if (same) faithful.add(row.pk);
        // Entries hold no operation_id of their own (the indexes project keys): it follows the tenant in pk.
        else audit.staleEntries.push(row.pk.slice(row.pk.indexOf('#') + 1));
      }
    }
    for (const record of records) {
      if (isTerminal(record.state)) continue;
      audit.unresolved += 1;
      const inUnresolved = shown.get(UNRESOLVED_INDEX)?.has(record.pk) === true;
      const needsAttention = record.state !== 'needs_reconciliation';
      const inAttention = shown.get(ATTENTION_INDEX)?.has(record.pk) === true;
      if (!inUnresolved || (needsAttention && !inAttention)) audit.outsideIndexes.push(record.operation_id);
    }
    return audit;
  } finally {
    client.destroy();
  }
}

async function scan(
  client: DynamoDBClient,
  tableName: string,
  indexName?: string,
): Promise<OperationRecord[]> {
  const items: OperationRecord[] = [];
  let start: Record<string, never> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        ...(indexName ? { IndexName: indexName } : { ConsistentRead: true }),
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    for (const item of page.Items ?? []) items.push(unmarshall(item) as OperationRecord);
    start = page.LastEvaluatedKey as Record<string, never> | undefined;
  } while (start !== undefined);
  return items;
}
