import { createHash } from 'node:crypto';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type Clock, systemClock } from './clock';
import { assertOperationId } from './operation-id';

/** The body of a work-queue message (the tool-ledger contract, §6). */
export interface QueueMessage {
  operation_id: string;
  tenant: string;
  tool: string;
  arguments: unknown;
  agent_run_id?: string;
  /** ISO time after which the executor acknowledges the message without running it. */
  not_after?: string;
}

/**
 * The default life of a message: 18 days, the longest the default queues keep one (4 days in the work
 * queue, 14 in the DLQ), and a day below the shortest retention the default deployment accepts (19
 * days). A DLQ redrive resets a message's age, so without a `not_after` a redriven message could
 * outlive its record and run again.
 */
export const DEFAULT_MAX_AGE_MS = 18 * 86_400_000;

/** Options of {@link ToolLedgerQueueSender}. */
export interface QueueSenderOptions {
  /** URL of the work queue (a `.fifo` URL turns on FIFO group and deduplication IDs). */
  queueUrl: string;
  /** The tenant the queue is bound to; the executor refuses messages naming another. */
  tenant: string;
  /** @default `new SQSClient({})` (region and credentials from the environment) */
  sqs?: SQSClient;
  /**
   * How long a message stays worth running, ms: becomes `not_after`. Keep it below the records'
   * retention, so a message redriven from the DLQ cannot outlive the record that would replay it.
   * `false` sends no `not_after` (a redriven message then runs however old it is).
   * @default {@link DEFAULT_MAX_AGE_MS} (18 days)
   */
  maxAgeMs?: number | false;
  /** @default the system clock */
  clock?: Clock;
}

/** One intended action for the queue. */
export interface QueueSendInput {
  /** The action's identity, as for `ToolLedgerClient.call`. */
  operationId: string;
  tool: string;
  arguments: unknown;
  agentRunId?: string;
  /** Overrides `maxAgeMs` for this message: an absolute deadline. */
  notAfter?: Date;
  /**
   * FIFO only: the message group. @default a hash of the operation ID (no ordering between
   * operations; pass the agent run ID to run one run's calls in order)
   */
  messageGroupId?: string;
}

/** What {@link ToolLedgerQueueSender.send} returns. */
export interface QueueSendResult {
  messageId: string | undefined;
  /** FIFO only. */
  messageDeduplicationId?: string;
}

/**
 * Sends tool calls to a tool-ledger work queue instead of the HTTP API: for orchestrators that fire
 * and forget and read outcomes later with `ToolLedgerClient.get` / `waitFor`.
 *
 * Sending the same operation twice is safe: the ledger runs it once, whatever SQS delivers. On FIFO
 * queues the deduplication ID is derived from the tenant and operation ID too, which spares the
 * executor duplicates sent within SQS's five-minute window; it is an optimization, the ledger is the
 * guarantee.
 *
 * @example
 * ```ts
 * const sender = new ToolLedgerQueueSender({ queueUrl, tenant: 'acme', maxAgeMs: 86_400_000 });
 * await sender.send({ operationId: operationIdFor({ agentRunId, step, callIndex: 0 }),
 *   tool: 'webhook.post', arguments: { url, json } });
 * ```
 */
export class ToolLedgerQueueSender {
  private readonly queueUrl: string;
  private readonly tenant: string;
  private readonly sqs: SQSClient;
  private readonly fifo: boolean;
  private readonly maxAgeMs: number | false;
  private readonly clock: Clock;

  constructor(options: QueueSenderOptions) {
    if (options.tenant.length === 0) throw new TypeError('tenant is required');
    this.queueUrl = options.queueUrl;
    this.tenant = options.tenant;
    this.sqs = options.sqs ?? new SQSClient({});
    this.fifo = options.queueUrl.endsWith('.fifo');
    this.maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.clock = options.clock ?? systemClock;
  }

  /** Sends one message (the SDK retries transport errors itself). */
  async send(input: QueueSendInput): Promise<QueueSendResult> {
    const message = this.message(input);
    const command = new SendMessageCommand({
      QueueUrl: this.queueUrl,
      MessageBody: JSON.stringify(message),
      ...(this.fifo
        ? {
            MessageGroupId: input.messageGroupId ?? fifoIdFor('g', this.tenant, input.operationId),
            MessageDeduplicationId: fifoIdFor('d', this.tenant, input.operationId),
          }
        : {}),
    });
    const output = await this.sqs.send(command);
    const result: QueueSendResult = { messageId: output.MessageId };
    if (this.fifo) result.messageDeduplicationId = command.input.MessageDeduplicationId;
    return result;
  }

  /** The message body this sender would send for `input` (the tool-ledger contract, §6). */
  message(input: QueueSendInput): QueueMessage {
    assertOperationId(input.operationId);
    if (input.arguments === undefined) throw new TypeError('arguments are required (use {} for none)');
    const message: QueueMessage = {
      operation_id: input.operationId,
      tenant: this.tenant,
      tool: input.tool,
      arguments: input.arguments,
    };
    if (input.agentRunId !== undefined) message.agent_run_id = input.agentRunId;
    const notAfter =
      input.notAfter ?? (this.maxAgeMs === false ? undefined : new Date(this.clock.now() + this.maxAgeMs));
    if (notAfter !== undefined) message.not_after = notAfter.toISOString();
    return message;
  }
}

/**
 * A FIFO group or deduplication ID for an operation: SQS allows at most 128 characters of a
 * restricted alphabet, and operation IDs may be 255 printable characters, so the ID is hashed
 * (base64url SHA-256: 43 characters, always allowed). The tenant is part of the hash because two
 * tenants may use the same operation ID.
 *
 * @example
 * ```ts
 * fifoIdFor('d', 'acme', 'run-42:s3:c0'); // 'tl1d_' + 43 characters
 * ```
 */
export function fifoIdFor(kind: 'g' | 'd', tenant: string, operationId: string): string {
  const hash = createHash('sha256').update(`${tenant}\u0000${operationId}`, 'utf8').digest('base64url');
  return `tl1${kind}_${hash}`;
}

/**
 * Sends one tool call to a work queue; a shorthand for a one-off {@link ToolLedgerQueueSender}.
 *
 * @example
 * ```ts
 * await sendToQueue({ queueUrl, tenant: 'acme' }, { operationId, tool: 'workspace.append_line', arguments });
 * ```
 */
export function sendToQueue(options: QueueSenderOptions, input: QueueSendInput): Promise<QueueSendResult> {
  return new ToolLedgerQueueSender(options).send(input);
}
