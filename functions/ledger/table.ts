import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { UNRESOLVED_PROJECTION } from './index-shards';
import { ATTENTION_INDEX, UNRESOLVED_INDEX } from './keys';

/**
 * The ledger table as local mode and tests create it. The CDK construct declares the same keys and
 * indexes (checked by the CDK tests); keep the two in step.
 */
export function ledgerTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
      { AttributeName: 'attention_shard', AttributeType: 'S' },
      { AttributeName: 'attention_at', AttributeType: 'N' },
      { AttributeName: 'unresolved_tenant', AttributeType: 'S' },
      { AttributeName: 'unresolved_at', AttributeType: 'N' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: ATTENTION_INDEX,
        KeySchema: [
          { AttributeName: 'attention_shard', KeyType: 'HASH' },
          { AttributeName: 'attention_at', KeyType: 'RANGE' },
        ],
        // The reconciler reads the items it acts on (consistent BatchGetItem): keys are all it needs.
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
      {
        IndexName: UNRESOLVED_INDEX,
        KeySchema: [
          { AttributeName: 'unresolved_tenant', KeyType: 'HASH' },
          { AttributeName: 'unresolved_at', KeyType: 'RANGE' },
        ],
        // The listing filters on the state, then reads the page's items whole.
        Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...UNRESOLVED_PROJECTION] },
      },
    ],
  };
}

/**
 * Creates the ledger table if it does not exist and waits until it is active. TTL is switched on
 * where the store supports it; dynalite does not (expiry is enforced on read anyway, SPEC §2).
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
        TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      }),
    );
  } catch {
    // dynalite: UnknownOperationException. Expiry never depends on the sweep.
  }
}
