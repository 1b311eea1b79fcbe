import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { LEDGER_TABLE, LIMIT_KEY_PREFIX } from '../contract/table';
import { errorClass } from '../domain/errors';
import { limitOf, type TenantRateLimiter, type TenantRateLimits } from '../engine/tenant-rate-limit';
import { logger } from '../observability/logger';

/** How long a second's counter is kept after it (DynamoDB TTL), seconds. */
const COUNTER_TTL_SECONDS = 120;

/**
 * The per-tenant limiter on the ledger table: one counter item per tenant and second
 * (`pk = tool-ledger/limit#<tenant>`, `sk` = the second), raised by one conditional `UpdateItem` per
 * request that fails when the second's count has reached the limit. The counters live in the ledger's
 * own key namespace, which no tenant's operation keys can reach, and expire with DynamoDB TTL.
 *
 * ```
 *  request ─ UpdateItem ADD n 1 IF n < limit ─┬ ok ──────────────── admitted
 *                                             ├ condition failed ── 429 throttled (Retry-After: 1)
 *                                             └ any other error ─── admitted (fails open), logged
 * ```
 *
 * @example
 * ```ts
 * const limiter = new DynamoTenantLimiter(client, 'ledger', { '*': 400 });
 * const { admitted } = await limiter.admit('acme', Date.now());
 * ```
 */
export class DynamoTenantLimiter implements TenantRateLimiter {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly limits: TenantRateLimits,
  ) {}

  async admit(tenant: string, nowMs: number): Promise<{ admitted: boolean; limit: number }> {
    const limit = limitOf(this.limits, tenant);
    if (limit === undefined) return { admitted: true, limit: Number.POSITIVE_INFINITY };
    const second = Math.floor(nowMs / 1000);
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: {
            [LEDGER_TABLE.partitionKey.name]: { S: `${LIMIT_KEY_PREFIX}#${tenant}` },
            [LEDGER_TABLE.sortKey.name]: { S: String(second) },
          },
          UpdateExpression: 'ADD #n :one SET #e = :e',
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
          ExpressionAttributeNames: { '#n': 'requests', '#e': LEDGER_TABLE.ttlAttribute },
          ExpressionAttributeValues: {
            ':one': { N: '1' },
            ':limit': { N: String(limit) },
            ':e': { N: String(second + COUNTER_TTL_SECONDS) },
          },
        }),
      );
      return { admitted: true, limit };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return { admitted: false, limit };
      logger.warn('tenant limit not counted', { tenant, error_class: errorClass(error) });
      return { admitted: true, limit };
    }
  }
}
