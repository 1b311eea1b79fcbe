import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';

/**
 * The baseline: what an AWS user would write instead of tool-ledger. A Lambda handler wrapped in
 * Powertools `makeIdempotent`, persisted with `DynamoDBPersistenceLayer` in a table of Powertools' own
 * schema, keyed on the operation ID, with payload validation on the arguments (so a reused key with
 * other arguments is refused, as tool-ledger refuses it).
 */

/** The event the baseline handler takes: the same call tool-ledger receives. */
export interface BaselineEvent {
  operation_id: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** The table Powertools documents: partition key `id`, nothing else (TTL on `expiration` in AWS). */
export function powertoolsTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
  };
}

/** Creates the baseline's table and waits until it is active. */
export async function createPowertoolsTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new CreateTableCommand(powertoolsTableDefinition(tableName)));
  await waitUntilTableExists(
    { client, maxWaitTime: 30, minDelay: 0.05, maxDelay: 0.2 },
    { TableName: tableName },
  );
}

/** Options of {@link powertoolsHandler}. */
export interface BaselineOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Powertools' in-memory cache of completed records. @default false */
  useLocalCache?: boolean;
  /** The effect. */
  work: (event: BaselineEvent) => Promise<unknown>;
}

/** A Lambda handler of the baseline. */
export type BaselineHandler = (event: BaselineEvent, context: Context) => Promise<unknown>;

/**
 * Builds the baseline handler. Each handler has its own persistence layer, so each has its own local
 * cache (a handler is one Lambda process).
 *
 * @example
 * ```ts
 * const handler = powertoolsHandler({ client, tableName: 'idempotency', work: async () => ({ ok: true }) });
 * await handler({ operation_id: 'op-1', tool: 't', arguments: {} }, lambdaContext(10_000));
 * ```
 */
export function powertoolsHandler(options: BaselineOptions): BaselineHandler {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: options.tableName,
    awsSdkV3Client: options.client,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'operation_id',
    payloadValidationJmesPath: 'arguments',
    throwOnNoIdempotencyKey: true,
    useLocalCache: options.useLocalCache ?? false,
  });
  return makeIdempotent(async (event: BaselineEvent, _context: Context) => options.work(event), {
    persistenceStore,
    config,
  });
}

/** A call of a plain function the baseline wraps: the same call `ledger.run` records. */
export interface BaselineCall {
  operation_id: string;
  arguments: Record<string, unknown>;
}

/** Options of {@link powertoolsFunction}. */
export interface BaselineFunctionOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Powertools' in-memory cache of completed records. @default false */
  useLocalCache?: boolean;
  /** The function made idempotent. */
  fn: (call: BaselineCall) => Promise<unknown>;
  /** How long the in-progress lock holds, ms. @default 60000 (the lease `ledger.run` asks for by default) */
  lockMs?: number;
}

/**
 * The baseline around a plain function, not a Lambda handler: what a caller writes to make one call in
 * its own process run once (`makeIdempotent(fn, …)`, the payload its first argument), keyed and
 * validated as {@link powertoolsHandler} is. Its in-progress lock lasts `lockMs`, given as Powertools
 * takes it, a Lambda context's remaining time, registered before each call (without one it sets no lock
 * and warns on the console at every call).
 *
 * @example
 * ```ts
 * const once = powertoolsFunction({ client, tableName: 'idempotency', fn: async (call) => charge(call) });
 * await once({ operation_id: 'op-1', arguments: { cents: 500 } });
 * ```
 */
export function powertoolsFunction(
  options: BaselineFunctionOptions,
): (call: BaselineCall) => Promise<unknown> {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: options.tableName,
    awsSdkV3Client: options.client,
  });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'operation_id',
    payloadValidationJmesPath: 'arguments',
    throwOnNoIdempotencyKey: true,
    useLocalCache: options.useLocalCache ?? false,
  });
  const once = makeIdempotent(async (call: BaselineCall) => options.fn(call), { persistenceStore, config });
  const lockMs = options.lockMs ?? 60_000;
  return (call) => {
    config.registerLambdaContext(lambdaContext(lockMs));
    return once(call);
  };
}

/**
 * A Lambda context with the given remaining time. Powertools sets its in-progress expiry to now plus
 * the remaining time, exactly as in a real invocation.
 */
export function lambdaContext(remainingMs: number): Context {
  const deadline = Date.now() + remainingMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'baseline',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:baseline',
    memoryLimitInMB: '1024',
    awsRequestId: 'bench',
    logGroupName: '/aws/lambda/baseline',
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
