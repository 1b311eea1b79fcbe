import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { powertoolsHandler } from './powertools-baseline';

/**
 * The baseline as a Lambda entry point, bundled beside tool-ledger's handlers for the cold-start
 * comparison: Powertools idempotency, its DynamoDB persistence and a trivial effect.
 */
export const handler = powertoolsHandler({
  client: new DynamoDBClient({}),
  tableName: process.env.IDEMPOTENCY_TABLE_NAME ?? 'idempotency',
  work: async (event) => ({ ok: true, operation_id: event.operation_id }),
});
