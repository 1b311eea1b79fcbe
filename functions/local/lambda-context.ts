import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/**
 * Lambda invocations on one machine. Local mode calls the same handler functions Lambda calls, with a
 * `Context` whose clock runs out like Lambda's, and stops waiting for them at the same hard deadline,
 * so the engine's deadline arithmetic (lease ≤ remaining time − commit reserve) is exercised locally.
 */

/** The handler did not finish before its function's timeout; Lambda would have ended the invocation. */
export class LambdaTimeoutError extends Error {
  /** The function that timed out. */
  readonly functionName: string;
  constructor(functionName: string, timeoutMs: number) {
    super(`${functionName} did not finish within its ${timeoutMs} ms timeout`);
    this.name = 'LambdaTimeoutError';
    this.functionName = functionName;
  }
}

/** A local stand-in for one deployed function: its name and its timeout. */
export interface LocalFunction {
  /** Used in the synthetic ARN and log group, like a deployed function's name. */
  name: string;
  /** The function's configured timeout, ms: the hard deadline of every invocation. */
  timeoutMs: number;
}

/**
 * A Lambda `Context` whose `getRemainingTimeInMillis` counts down from the function's timeout, starting
 * now.
 *
 * @example
 * ```ts
 * const context = invocationContext({ name: 'executor', timeoutMs: 120_000 });
 * context.getRemainingTimeInMillis(); // ≈ 120000
 * ```
 */
export function invocationContext(fn: LocalFunction, requestId: string = randomUUID()): Context {
  const deadline = Date.now() + fn.timeoutMs;
  const unsupported = () => {
    throw new Error('callback-style completion is not supported; return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: fn.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${fn.name}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${fn.name}`,
    logStreamName: `local/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/**
 * Invokes a handler as Lambda would: with a fresh context, and rejecting with {@link LambdaTimeoutError}
 * at the function's timeout. Node cannot stop the handler's promise, so work still running after the
 * deadline is abandoned, exactly what a frozen or recycled Lambda sandbox means for its callers: the
 * engine's own deadlines end before this one, so in practice it only fires for a broken handler.
 *
 * @example
 * ```ts
 * const response = await invoke({ name: 'executor', timeoutMs: 120_000 }, handler, event);
 * ```
 */
export async function invoke<E, R>(
  fn: LocalFunction,
  handler: (event: E, context: Context) => Promise<R>,
  event: E,
  requestId?: string,
): Promise<R> {
  const context = invocationContext(fn, requestId);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LambdaTimeoutError(fn.name, fn.timeoutMs)), fn.timeoutMs);
  });
  try {
    return await Promise.race([handler(event, context), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
