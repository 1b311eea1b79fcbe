import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { CompletionEvent } from '../contract/completion-event';
import { errorClass } from '../domain/errors';
import { isState, type OperationState } from '../domain/states';
import { logger } from '../observability/logger';
import { completionEventOf, type EventSource } from './completion-event';
import type { EventSink } from './event-sink';

/** A stream record's event, if its write is one anybody waits for. */
export function eventOfStreamRecord(record: DynamoDBRecord): CompletionEvent | undefined {
  const image = record.dynamodb?.NewImage;
  if (record.eventName === 'REMOVE' || image === undefined) return undefined;
  const after = unmarshall(image as Record<string, AttributeValue>) as Partial<EventSource>;
  // Only operation records: the read cache's and the table identity's items have no state.
  if (!isState(after.state) || typeof after.operation_id !== 'string' || typeof after.tenant !== 'string')
    return undefined;
  const oldImage = record.dynamodb?.OldImage;
  const beforeState =
    oldImage === undefined ? undefined : unmarshall(oldImage as Record<string, AttributeValue>).state;
  const before: OperationState | null = isState(beforeState) ? beforeState : null;
  return completionEventOf(before, after as EventSource);
}

/**
 * The events function (AWS): reads the ledger table's stream (new and old images) and publishes a
 * completion event for every transition into a waited-for state. The stream holds every write that
 * landed, so a crash between a transition and its event loses nothing: the record is read again and the
 * event sent again, with the same ID (at least once).
 *
 * A failed publish reports the first record of the failed batch and every later one
 * (`batchItemFailures`): Lambda retries from there, in order.
 */
export function createStreamEventsHandler(
  sink: () => EventSink,
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async (event) => {
    const pending: { id: string; event: CompletionEvent }[] = [];
    for (const record of event.Records) {
      const completion = eventOfStreamRecord(record);
      if (completion !== undefined)
        pending.push({ id: record.dynamodb?.SequenceNumber ?? record.eventID ?? '', event: completion });
    }
    for (let i = 0; i < pending.length; i += 10) {
      const chunk = pending.slice(i, i + 10);
      try {
        await sink().publish(chunk.map((p) => p.event));
      } catch (error) {
        logger.warn('completion events not published', {
          events: pending.length - i,
          error_class: errorClass(error),
        });
        return { batchItemFailures: pending.slice(i).map((p) => ({ itemIdentifier: p.id })) };
      }
    }
    return { batchItemFailures: [] };
  };
}
