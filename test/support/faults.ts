import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** A fault to inject into one DynamoDB operation. */
export interface FaultPlan {
  /** SDK command name, e.g. `PutItemCommand`. */
  command: string;
  /** `before`: fail without sending (throttling); `after`: send, then lose the response. */
  when: 'before' | 'after';
  /** How many times to inject it (then calls pass). */
  times: number;
  /** The error to throw. */
  error: () => Error;
}

/** Counts of what the fault middleware saw. */
export interface FaultLog {
  sent: Record<string, number>;
  injected: number;
}

/**
 * Adds fault-injecting middleware to a real client (pointed at dynalite). It sits inside the SDK's
 * retry loop, so SDK retries see the faults exactly as they would see a real throttle or a lost
 * response: the database is real, only the network between is lying.
 */
export function injectFaults(client: DynamoDBClient, plans: FaultPlan[]): FaultLog {
  const log: FaultLog = { sent: {}, injected: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = (context as { commandName?: string }).commandName ?? 'unknown';
      const plan = plans.find((p) => p.command === name && p.times > 0);
      if (plan?.when === 'before') {
        plan.times -= 1;
        log.injected += 1;
        throw plan.error();
      }
      log.sent[name] = (log.sent[name] ?? 0) + 1;
      const out = await next(args);
      if (plan?.when === 'after') {
        plan.times -= 1;
        log.injected += 1;
        throw plan.error();
      }
      return out;
    },
    { step: 'finalizeRequest', priority: 'low', name: 'faultInjection' },
  );
  return log;
}

/** An error the SDK classifies as throttling (retried with backoff). */
export function throttling(): Error {
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ProvisionedThroughputExceededException',
    $metadata: { httpStatusCode: 400 },
    $fault: 'client',
  });
}

/** A transport error after the request was sent: the response is lost. */
export function lostResponse(): Error {
  return Object.assign(new Error('socket hang up'), {
    name: 'TimeoutError',
    code: 'ECONNRESET',
    $metadata: {},
  });
}
