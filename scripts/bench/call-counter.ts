import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** What one side sent to DynamoDB during a measured span. */
export interface CallTally {
  /** Every request sent, SDK retries included. */
  calls: number;
  byCommand: Record<string, number>;
  /**
   * Consistent GetItems that only fetch the item a failed conditional write would have returned with
   * `ReturnValuesOnConditionCheckFailure`. DynamoDB returns it; dynalite drops it, so on AWS these
   * calls do not happen.
   */
  fallbackReads: number;
  /** Items returned by Query responses. */
  queryItems: number;
  /** Wall time spent inside requests, ms (meaningful for sequential work only). */
  dynamoMs: number;
  /**
   * HTTP requests the side's own client sent to tool-ledger's API (the `ledger.run` rows); 0 for a side
   * that talks to DynamoDB alone.
   */
  httpRequests: number;
}

/** Where a side's tally comes from: a counter in this process, or one in local mode's (over HTTP). */
export interface TallySource {
  /** What was counted since the last call; starts again from zero. */
  take(): CallTally | Promise<CallTally>;
}

/** A tally with nothing in it. */
export function emptyTally(): CallTally {
  return { calls: 0, byCommand: {}, fallbackReads: 0, queryItems: 0, dynamoMs: 0, httpRequests: 0 };
}

/** Adds `b` into `a`. */
export function addTally(a: CallTally, b: CallTally): void {
  a.calls += b.calls;
  a.fallbackReads += b.fallbackReads;
  a.queryItems += b.queryItems;
  a.dynamoMs += b.dynamoMs;
  a.httpRequests += b.httpRequests;
  for (const [name, n] of Object.entries(b.byCommand)) a.byCommand[name] = (a.byCommand[name] ?? 0) + n;
}

type Input = Record<string, unknown>;

/**
 * SDK middleware that counts every request a client sends. It sits in the deserialize step, below the
 * SDK's retry loop, so each retry is counted as the network sees it.
 *
 * A GetItem is tagged as a fallback read when it reads, consistently, the key of a conditional write
 * that just failed without returning the old item: exactly the read that
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` makes unnecessary on AWS.
 *
 * @example
 * ```ts
 * const counter = new CallCounter(client, ['pk', 'sk']);
 * await work();
 * const tally = counter.take(); // { calls: 2, byCommand: { PutItemCommand: 1, … }, … }
 * ```
 */
export class CallCounter implements TallySource {
  private tally = emptyTally();
  private readonly failedWrites = new Set<string>();

  constructor(
    client: DynamoDBClient,
    private readonly keyAttributes: readonly string[],
  ) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = (context as { commandName?: string }).commandName ?? 'unknown';
        const input = ((args as { input?: unknown }).input ?? {}) as Input;
        const key = this.keyOf(name, input);
        this.tally.calls += 1;
        this.tally.byCommand[name] = (this.tally.byCommand[name] ?? 0) + 1;
        if (
          name === 'GetItemCommand' &&
          input.ConsistentRead === true &&
          key &&
          this.failedWrites.delete(key)
        ) {
          this.tally.fallbackReads += 1;
        }
        const started = performance.now();
        try {
          const out = await next(args);
          if (name === 'QueryCommand') {
            const output = out.output as { Count?: number; Items?: unknown[] };
            this.tally.queryItems += output.Count ?? output.Items?.length ?? 0;
          }
          return out;
        } catch (error) {
          const e = error as { name?: string; Item?: unknown };
          if (key && e.name === 'ConditionalCheckFailedException' && e.Item === undefined) {
            this.failedWrites.add(key);
          }
          throw error;
        } finally {
          this.tally.dynamoMs += performance.now() - started;
        }
      },
      { step: 'deserialize', priority: 'high', name: 'benchCallCounter' },
    );
  }

  /** Returns what was counted since the last call and starts again from zero. */
  take(): CallTally {
    const out = this.tally;
    this.tally = emptyTally();
    this.failedWrites.clear();
    return out;
  }

  private keyOf(command: string, input: Input): string | undefined {
    const source = (command === 'PutItemCommand' ? input.Item : input.Key) as Input | undefined;
    if (!source) return undefined;
    return `${String(input.TableName)}|${this.keyAttributes.map((a) => JSON.stringify(source[a] ?? null)).join('|')}`;
  }
}
