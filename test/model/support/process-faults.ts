import { AsyncLocalStorage } from 'node:async_hooks';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { FaultSpec } from './schedule';

/**
 * Faults of a simulated worker process, injected between a real SDK client and a real dynalite: the
 * database is real, only the network and the process lie.
 *
 * - A crash kills the whole process: every request it has in flight or sends later hangs forever, the
 *   way a dead Lambda never answers. Nothing it does reaches the database again.
 * - Throttling fails a request before it is sent; a lost response sends it, lets DynamoDB apply it,
 *   then fails in transit. Both sit inside the SDK's retry loop, as real faults would.
 * - A stall pauses one step at its commit or right after its claim until the world lets it go on.
 *
 * Which step a request belongs to comes from an AsyncLocalStorage, so concurrent steps on one process
 * each get their own faults.
 */

/** The faults of the step currently running, with its counters. */
export class StepFaults {
  /** DynamoDB requests this step has made (SDK retries included). */
  requests = 0;
  private matched = 0;
  private stalled = false;

  /**
   * @param stall called when the step pauses; resolves when the world lets it go on.
   */
  constructor(
    readonly spec: FaultSpec,
    readonly stall: () => Promise<void> = async () => {},
  ) {}

  /**
   * What to do with the next request of this step. `body` is the request's input as JSON, used to
   * recognise the two writes a stall waits at: the claim of an attempt (a reservation or claim that
   * sets `lease_expires_at`: pause after it landed, before `execute`) and the commit of an outcome
   * (an update that sets `outcome_by`: pause before sending it, after `execute`).
   */
  next(command: string, body: string): RequestPlan {
    this.requests += 1;
    const out: RequestPlan = {};
    if (this.spec.stall && !this.stalled) {
      const write = command === 'PutItemCommand' || command === 'UpdateItemCommand';
      if (this.spec.stall === 'before_execute' && write && body.includes('"lease_expires_at"')) {
        this.stalled = true;
        out.stall = 'after_response';
      }
      if (
        this.spec.stall === 'before_commit' &&
        command === 'UpdateItemCommand' &&
        body.includes('"outcome_by"')
      ) {
        this.stalled = true;
        out.stall = 'before_send';
      }
    }
    const crash = this.spec.crash;
    if (crash && crash.at === this.requests) out.crash = crash.when;
    const inject = this.spec.inject;
    if (inject && inject.command === command) {
      this.matched += 1;
      if (this.matched > inject.skip && this.matched <= inject.skip + inject.times) out.fail = inject.kind;
    }
    return out;
  }
}

/** What the fault layer does with one request. */
export interface RequestPlan {
  crash?: 'before' | 'after';
  fail?: 'throttle' | 'lost';
  stall?: 'before_send' | 'after_response';
}

/** Where the running step's faults live. */
export const stepFaults = new AsyncLocalStorage<StepFaults>();

/** Counts of what the fault layer did, for the suite's coverage summary. */
export const faultStats = { crashes: 0, throttled: 0, lost: 0, queueDown: 0, stalls: 0 };

function never(): Promise<never> {
  return new Promise<never>(() => {});
}

function throttling(): Error {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ProvisionedThroughputExceededException',
    $metadata: { httpStatusCode: 400 },
    $fault: 'client',
  });
}

function lostResponse(): Error {
  return Object.assign(new Error('socket hang up'), {
    name: 'TimeoutError',
    code: 'ECONNRESET',
    $metadata: {},
  });
}

/** The token-based retry strategy the SDK client accepts (the client's own config type names it). */
type RetryStrategyV2 = Extract<
  NonNullable<DynamoDBClientConfig['retryStrategy']>,
  { acquireInitialRetryToken: unknown }
>;
type RetryToken = Awaited<ReturnType<RetryStrategyV2['acquireInitialRetryToken']>>;
type RetryErrorInfo = Parameters<RetryStrategyV2['refreshRetryTokenForRetry']>[1];

/**
 * SDK retries without backoff delays: the same retry decisions as the standard strategy (throttling
 * and transient errors, up to `maxAttempts`), so that a thousand schedules do not sleep.
 */
export function zeroDelayRetry(maxAttempts: number): RetryStrategyV2 {
  const token = (count: number): RetryToken => ({ getRetryCount: () => count, getRetryDelay: () => 0 });
  return {
    async acquireInitialRetryToken() {
      return token(0);
    },
    async refreshRetryTokenForRetry(previous: RetryToken, info: RetryErrorInfo) {
      const next = previous.getRetryCount() + 1;
      const retryable = info.errorType === 'THROTTLING' || info.errorType === 'TRANSIENT';
      if (retryable && next < maxAttempts) return token(next);
      throw new Error('no retry');
    },
    recordSuccess() {},
  };
}

/**
 * The `pk` of the record a request moves to a new state, or undefined: a reservation (PutItem) or a
 * transition (an UpdateItem that appends a history entry, which every state change does and a
 * postponement or a late-outcome note does not).
 */
export function movedItem(command: string, input: unknown): string | undefined {
  const request = (input ?? {}) as {
    Item?: Record<string, unknown>;
    Key?: Record<string, unknown>;
    ExpressionAttributeNames?: Record<string, string>;
  };
  let key: unknown;
  if (command === 'PutItemCommand') key = request.Item?.pk;
  else if (
    command === 'UpdateItemCommand' &&
    Object.values(request.ExpressionAttributeNames ?? {}).includes('history')
  ) {
    key = request.Key?.pk;
  }
  // The document client has marshalled the item by now ({ S: '…' }); accept plain strings too.
  if (typeof key === 'string') return key;
  const marshalled = (key as { S?: unknown } | undefined)?.S;
  return typeof marshalled === 'string' ? marshalled : undefined;
}

/** One simulated process's connection to DynamoDB, and its life. */
export class ProcessLink {
  readonly client: DynamoDBClient;
  private alive = true;
  private onDeath: () => void = () => {};
  /** Settles when the process dies; never otherwise. */
  readonly died: Promise<'crashed'>;

  /**
   * @param onUnseenWrite called with the item's `pk` when a write that moves a record's state landed and
   *   its answer never reaches the writer (the process died meanwhile or right after it, or the response
   *   was lost): the one case where a move may be missing from the transition log.
   */
  constructor(
    endpoint: string,
    maxAttempts: number,
    private readonly onUnseenWrite: (pk: string) => void = () => {},
  ) {
    this.died = new Promise((resolve) => {
      this.onDeath = () => resolve('crashed');
    });
    this.client = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'model', secretAccessKey: 'model' },
      maxAttempts,
      retryStrategy: zeroDelayRetry(maxAttempts),
    });
    this.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.alive) return never();
        const name = (context as { commandName?: string }).commandName ?? 'unknown';
        const step = stepFaults.getStore();
        const plan =
          step?.next(name, step.spec.stall ? JSON.stringify((args as { input?: unknown }).input) : '') ?? {};
        if (plan.stall === 'before_send') {
          faultStats.stalls += 1;
          await step?.stall();
          if (!this.alive) return never();
        }
        if (plan.crash === 'before') {
          this.kill();
          return never();
        }
        if (plan.fail === 'throttle') {
          faultStats.throttled += 1;
          throw throttling();
        }
        const out = await next(args);
        // From here the write (if it is one) has landed: whatever keeps its answer from its writer
        // may leave its move without a log line.
        const unseen = () => {
          const pk = movedItem(name, (args as { input?: unknown }).input);
          if (pk !== undefined) this.onUnseenWrite(pk);
        };
        if (!this.alive) {
          unseen();
          return never();
        }
        if (plan.stall === 'after_response') {
          faultStats.stalls += 1;
          await step?.stall();
          if (!this.alive) {
            unseen();
            return never();
          }
        }
        if (plan.crash === 'after') {
          unseen();
          this.kill();
          return never();
        }
        if (plan.fail === 'lost') {
          unseen();
          faultStats.lost += 1;
          throw lostResponse();
        }
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'modelFaults' },
    );
  }

  /** True until the process crashed. */
  get isAlive(): boolean {
    return this.alive;
  }

  /** The process dies now. */
  kill(): void {
    if (!this.alive) return;
    this.alive = false;
    faultStats.crashes += 1;
    this.onDeath();
  }

  /** Closes the client's sockets (requests already hung stay hung). */
  destroy(): void {
    this.client.destroy();
  }
}
