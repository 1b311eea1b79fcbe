import * as z from 'zod/mini';
import { errorClass, LedgerError, LedgerUnavailableError } from '../domain/errors';
import { parseIJson } from '../domain/i-json';
import { queueRequester } from '../domain/principal';
import type { LedgerDeps, RequestContext } from '../engine/ledger-deps';
import { submitOperation } from '../engine/submit-operation';
import { logger } from '../observability/logger';
import { inOperationSpan } from '../observability/tracing';
import type { SenderBinding } from './sender-binding';

/** Largest message body accepted (SQS allows 256 KiB). */
const MAX_MESSAGE_BYTES = 256 * 1024;

const messageSchema = z.strictObject({
  operation_id: z.string(),
  tenant: z.string().check(z.minLength(1)),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  agent_run_id: z.optional(z.string().check(z.regex(/^[\x21-\x7e]{1,255}$/))),
  not_after: z.optional(z.iso.datetime({ offset: true })),
});

/** The tenants a work queue may carry (the contract, §6). */
export type QueueBinding = ReadonlySet<string>;

/**
 * Who sent the message (SQS `SenderId`) and which tenants each sender may act for: on AWS, where the
 * queue's producers cannot be trusted to name only their own tenant. Absent in local mode, whose one
 * queue is reachable only through the local stack.
 */
export interface MessageSender {
  id: string | undefined;
  binding: SenderBinding;
}

/**
 * What the executor tells SQS about one message (the contract, §6): `retry` reports a batch item failure (SQS
 * redelivers, then the DLQ keeps it); `ack` removes it because the ledger owns the outcome now.
 */
export interface WorkVerdict {
  action: 'ack' | 'retry';
  /** Why, for the log line (never content). */
  code: string;
}

/**
 * Handles one work-queue message: validates it, checks the queue's tenant binding, that its sender may
 * act for its tenant (when a sender is given) and `not_after`, then runs it through the same flow as a synchronous call (reserve or claim, run once, commit).
 *
 * @example
 * ```ts
 * const verdict = await handleWorkMessage(deps, req, record.body, new Set(['acme']));
 * if (verdict.action === 'retry') failures.push(record.messageId);
 * ```
 */
export async function handleWorkMessage(
  deps: LedgerDeps,
  req: RequestContext,
  body: string,
  binding: QueueBinding,
  sender?: MessageSender,
): Promise<WorkVerdict> {
  let message: z.infer<typeof messageSchema>;
  try {
    const parsed = messageSchema.safeParse(parseIJson(body, { maxDepth: 40, maxBytes: MAX_MESSAGE_BYTES }));
    if (!parsed.success) return poison('invalid_message');
    message = parsed.data;
  } catch {
    return poison('invalid_json');
  }
  if (!binding.has(message.tenant)) return poison('tenant_not_bound');
  // Before anything is read or reserved: a producer must not even learn whether the other tenant's
  // operation ID exists, let alone take it first.
  if (sender && !sender.binding.mayActFor(sender.id, message.tenant)) return poison('sender_not_bound');
  if (message.not_after !== undefined && Date.parse(message.not_after) < req.now) {
    return { action: 'ack', code: 'not_after_passed' };
  }
  // Whoever sent the message asked for the operation: its sender is the requester, so the role that
  // sent it cannot approve it (the contract, §5). A queue without identity says so on the record.
  const requester = queueRequester(sender?.id, message.tenant);
  try {
    const result = await inOperationSpan('execute_tool', undefined, () =>
      submitOperation(deps, req, {
        tenant: message.tenant,
        principal: requester.principal,
        ...(requester.unidentified ? { requesterUnidentified: true } : {}),
        operationId: message.operation_id,
        tool: message.tool,
        arguments: message.arguments,
        mode: 'worker',
        ...(message.agent_run_id === undefined ? {} : { agentRunId: message.agent_run_id }),
      }),
    );
    if (result.kind === 'retryable') return { action: 'retry', code: 'failed_retryable' };
    return { action: 'ack', code: `${result.kind}_${result.record.state}` };
  } catch (error) {
    if (error instanceof LedgerUnavailableError) return { action: 'retry', code: 'ledger_unavailable' };
    if (error instanceof LedgerError) {
      if (error.code === 'idempotency_key_reused') return { action: 'ack', code: error.code };
      return poison(error.code);
    }
    logger.error('work message failed', { error_class: errorClass(error) });
    return { action: 'retry', code: 'internal_error' };
  }
}

/** A message that can never run: report it failed so that the DLQ keeps the evidence. */
function poison(code: string): WorkVerdict {
  logger.warn('work message refused', { outcome_code: code });
  return { action: 'retry', code };
}
