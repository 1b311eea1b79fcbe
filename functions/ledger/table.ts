import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { type IndexSchema, type KeyAttribute, LEDGER_INDEXES, LEDGER_TABLE } from '../contract/table';
import type { OperationRecord } from '../domain/operation';

/**
 * Every attribute the table's keys name is a field of the record the engine writes: a key renamed in
 * the contract (functions/contract/table.ts) without the record following does not compile.
 */
export const KEY_FIELDS: readonly (keyof OperationRecord)[] = [
  LEDGER_TABLE.partitionKey.name,
  LEDGER_TABLE.sortKey.name,
  LEDGER_TABLE.ttlAttribute,
  LEDGER_TABLE.indexes.attention.partitionKey.name,
  LEDGER_TABLE.indexes.attention.sortKey.name,
  LEDGER_TABLE.indexes.unresolved.partitionKey.name,
  LEDGER_TABLE.indexes.unresolved.sortKey.name,
  LEDGER_TABLE.indexes.operations.partitionKey.name,
  LEDGER_TABLE.indexes.operations.sortKey.name,
];

/**
 * The ledger table as local mode and tests create it, from the contract the CDK construct declares it
 * from (functions/contract/table.ts): the same keys, indexes and projections on both.
 */
export function ledgerTableDefinition(tableName: string): CreateTableCommandInput {
  const keyAttributes: KeyAttribute[] = [LEDGER_TABLE.partitionKey, LEDGER_TABLE.sortKey];
  for (const index of LEDGER_INDEXES) keyAttributes.push(index.partitionKey, index.sortKey);
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: keyAttributes.map((key) => ({ AttributeName: key.name, AttributeType: key.type })),
    KeySchema: [
      { AttributeName: LEDGER_TABLE.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: LEDGER_TABLE.sortKey.name, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: LEDGER_INDEXES.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: index.sortKey.name, KeyType: 'RANGE' },
      ],
      Projection: projectionOf(index),
    })),
  };
}

function projectionOf(
  index: IndexSchema,
): NonNullable<CreateTableCommandInput['GlobalSecondaryIndexes']>[number]['Projection'] {
  return index.projection.type === 'INCLUDE'
    ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.attributes] }
    : { ProjectionType: 'KEYS_ONLY' };
}

/**
 * Creates the ledger table if it does not exist and waits until it is active. TTL is switched on
 * where the store supports it; dynalite does not (expiry is enforced on read anyway: the contract, §2).
 */
export async function ensureLedgerTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  await client.send(new CreateTableCommand(ledgerTableDefinition(tableName)));
  await waitUntilTableExists(
    { client, maxWaitTime: 30, minDelay: 0.05, maxDelay: 0.2 },
    { TableName: tableName },
  );
  try {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: LEDGER_TABLE.ttlAttribute, Enabled: true },
      }),
    );
  } catch {
    // dynalite: UnknownOperationException. Expiry never depends on the sweep.
  }
}
