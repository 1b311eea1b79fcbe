/**
 * `@tool-ledger/client/sqs`: what needs the AWS SDK's SQS client (an optional peer dependency):
 * sending tool calls to a work queue, and reading completion events from an events queue.
 */

export type { SqsEventQueueOptions } from './sqs-event-queue';
export { sqsEventQueue } from './sqs-event-queue';
export type { QueueMessage, QueueSenderOptions, QueueSendInput, QueueSendResult } from './sqs-sender';
export { DEFAULT_MAX_AGE_MS, fifoIdFor, sendToQueue, ToolLedgerQueueSender } from './sqs-sender';
