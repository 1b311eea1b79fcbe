import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyUnknownError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { LEDGER_TABLE, READ_KEY_PREFIX, READ_SK } from '../contract/table';
import { LedgerUnavailableError } from '../domain/errors';
import type { ReadCache, ReadCacheAnswer, ReadCacheOptions, ReadKey, StoredRead } from '../engine/read-cache';

/**
 * The read cache on Powertools idempotency, in the ledger's own table (the contract, §4, `effect: 'read'`).
 *
 * Why reads may use Powertools and writes must not: Powertools deletes its record when the function
 * throws, lets a duplicate run again once the in-progress lock expires, and completes without a
 * condition. For a write each of those is a second effect; for a read it is only a second read. What
 * a read gains is Powertools' cost profile: a conditional PutItem and an UpdateItem for a fresh read,
 * one PutItem for a replay (its `ReturnValuesOnConditionCheckFailure` carries the stored result), and
 * no call at all once the result is in this process's local cache.
 *
 * Storage: the SAME ledger table, in items of their own. Powertools' key is `tool-ledger/read#` +
 * SHA-256 of `[tenant, operation ID]` in `pk`, with the sort key `read` (ledger operations use `op`),
 * and `expires_at` as its expiry attribute, which is the table's TTL attribute. These items never
 * carry `attention_*` or `unresolved_*`, so they are in neither GSI: the reconciler and the operators'
 * listing never see a read. One table means one set of grants, one TTL and one local data file.
 *
 * ```
 *  read ─ PutItem(INPROGRESS) IF absent ∨ expired ─▶ run read ─┬ ok ──── UpdateItem(COMPLETED, result)
 *           │ local cache hit: no call                          └ throws ─ DeleteItem (next call runs again)
 *           └ exists ─▶ digest differs: conflict │ INPROGRESS: in_progress │ COMPLETED: replay
 * ```
 *
 * @example
 * ```ts
 * const cache = new PowertoolsReadCache(client, 'ledger');
 * await cache.runOnce({ tenant, operation_id, digest }, { tool: 'files.read', cacheSeconds: 60, lockUntil }, run);
 * ```
 */
export class PowertoolsReadCache implements ReadCache {
  /** One runner per tool: each has its own cache lifetime and its own local cache, kept for the process's life. */
  private readonly runners = new Map<string, ReadRunner>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async runOnce(
    key: ReadKey,
    options: ReadCacheOptions,
    read: () => Promise<StoredRead>,
  ): Promise<ReadCacheAnswer> {
    const invocation: ReadInvocation = {
      getRemainingTimeInMillis: () => Math.max(1, options.lockUntil - Date.now()),
      run: read,
    };
    let response: ReadResponse;
    try {
      response = await this.runnerFor(options)(key, invocation);
    } catch (error) {
      if (error instanceof IdempotencyValidationError) {
        const stored = error.existingRecord?.getResponse() as Partial<StoredRead> | undefined;
        return { kind: 'conflict', storedDigest: stored?.arguments_digest };
      }
      if (error instanceof IdempotencyAlreadyInProgressError) return { kind: 'in_progress' };
      if (error instanceof IdempotencyUnknownError) {
        // Persistence failures (unreachable, throttled, inconsistent state): nothing durable was decided.
        throw new LedgerUnavailableError('the read cache is unavailable or throttled', error);
      }
      // What the read itself threw: the record is deleted, the caller decides.
      throw error;
    }
    const { replayed, expires_at: expiresAt, ...stored } = response;
    return replayed === true ? { kind: 'replayed', stored, expiresAt } : { kind: 'ran', stored };
  }

  private runnerFor(options: ReadCacheOptions): ReadRunner {
    const existing = this.runners.get(options.tool);
    if (existing) return existing;
    const persistenceStore = new ReadCachePersistence({
      tableName: this.tableName,
      awsSdkV3Client: this.client,
      keyAttr: LEDGER_TABLE.partitionKey.name,
      expiryAttr: LEDGER_TABLE.ttlAttribute,
    });
    const config = new IdempotencyConfig({
      eventKeyJmesPath: '[tenant, operation_id]',
      payloadValidationJmesPath: 'digest',
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: options.cacheSeconds,
      useLocalCache: true,
      hashFunction: 'sha256',
      // Called only when Powertools answers from its cache or its table: that is what marks a replay.
      responseHook: (response, record) =>
        Object.assign({}, response as object, { replayed: true, expires_at: record.expiryTimestamp }),
    });
    const idempotent = makeIdempotent(
      (_key: ReadKey, invocation: ReadInvocation): Promise<StoredRead> => invocation.run(),
      { persistenceStore, config, keyPrefix: READ_KEY_PREFIX },
    );
    const runner: ReadRunner = (key, invocation) => idempotent(key, invocation) as Promise<ReadResponse>;
    this.runners.set(options.tool, runner);
    return runner;
  }
}

/**
 * The second argument of the idempotent function. It has `getRemainingTimeInMillis`, so Powertools
 * treats it as the Lambda context and sets the in-progress expiry from it (the read's deadline plus the
 * lease grace): a read whose process died is run again after that, not after the whole cache lifetime.
 */
interface ReadInvocation {
  getRemainingTimeInMillis(): number;
  run(): Promise<StoredRead>;
}

/** A stored read as the runner returns it; `replayed` and `expires_at` are added on replays only. */
interface ReadResponse extends StoredRead {
  replayed?: boolean;
  expires_at?: number;
}

type ReadRunner = (key: ReadKey, invocation: ReadInvocation) => Promise<ReadResponse>;

/**
 * Powertools' DynamoDB layer with the ledger table's key schema: its hashed key in `pk`, and `read` in
 * `sk`. Its own composite-key mode would put every read under one static partition key instead.
 */
class ReadCachePersistence extends DynamoDBPersistenceLayer {
  protected override getKey(idempotencyKey: string): Record<string, AttributeValue> {
    return marshall({
      [LEDGER_TABLE.partitionKey.name]: idempotencyKey,
      [LEDGER_TABLE.sortKey.name]: READ_SK,
    });
  }
}
