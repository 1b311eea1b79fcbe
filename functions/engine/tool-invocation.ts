import { downstreamKey } from '../domain/downstream-key';
import type { ToolContext } from '../domain/tool';
import { logger } from '../observability/logger';

/** Who a tool call is for: what a tool's context is built from. */
export interface InvocationIdentity {
  tenant: string;
  operationId: string;
  /**
   * The `reservation_id` of the operation's record: part of the downstream key, so that a new
   * operation reusing an expired operation ID never shares the old one's downstream identity.
   */
  reservationId: string;
  toolName: string;
  attempt: number;
}

/** Raised when an invocation reaches its hard deadline; the engine stops waiting for the tool. */
export class DeadlineExceededError extends Error {
  constructor() {
    super('the attempt reached its hard deadline');
    this.name = 'DeadlineExceededError';
  }
}

/**
 * The context every tool function receives (`execute` and `reconcile`, on the write and the read
 * path alike): identity, the downstream key, the signal, and a logger that tags lines with identities
 * only.
 */
export function toolContext(identity: InvocationIdentity, signal: AbortSignal): ToolContext {
  const ids = {
    operation_id: identity.operationId,
    tool_name: identity.toolName,
    attempt_number: identity.attempt,
  };
  return {
    operationId: identity.operationId,
    tenant: identity.tenant,
    downstreamKey: downstreamKey(identity.tenant, identity.operationId, identity.reservationId),
    attempt: identity.attempt,
    signal,
    logger: {
      info: (message, fields) => logger.info(message, { ...fields, ...ids }),
      warn: (message, fields) => logger.warn(message, { ...fields, ...ids }),
    },
  };
}

/**
 * Runs a tool function under a hard deadline (epoch ms). At the deadline its signal is aborted with
 * the platform's `TimeoutError` (as `AbortSignal.timeout` does, so tools can tell a deadline from
 * another abort) and the engine stops waiting with {@link DeadlineExceededError}, even if the tool
 * ignores the signal.
 *
 * @example
 * ```ts
 * const value = await underDeadline(lease.deadline, deps.clock, (signal) => tool.execute(args, toolContext(id, signal)));
 * ```
 */
export async function underDeadline<T>(
  deadlineAt: number,
  clock: () => number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        controller.abort(new DOMException('the attempt reached its hard deadline', 'TimeoutError'));
        reject(new DeadlineExceededError());
      },
      Math.max(0, deadlineAt - clock()),
    );
  });
  try {
    return await Promise.race([run(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
