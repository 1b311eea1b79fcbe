import { errorClass } from '../domain/errors';
import type { LedgerStore } from '../ledger/ledger-store';
import { logger } from '../observability/logger';
import type { EventSink } from './event-sink';

/**
 * Sends the completion events that records still hold (written with their transition, never sent:
 * the process died between the write and the send, or the send failed) and forgets each one sent. Run
 * by local mode at its start, before anything else writes; on AWS the table's stream does this work.
 * Returns how many events were sent. A record whose send fails keeps its events for the next start.
 *
 * @example
 * ```ts
 * const sent = await sendUnsentEvents(store, new SqsEventSink(sqs, eventsQueueUrl));
 * ```
 */
export async function sendUnsentEvents(store: LedgerStore, sink: EventSink): Promise<number> {
  let sent = 0;
  for await (const { key, events } of store.unsentEvents()) {
    try {
      await sink.publish(events);
      for (const event of events) await store.clearUnsentEvent(key, event.event_id);
      sent += events.length;
    } catch (error) {
      logger.warn('completion events not sent', { events: events.length, error_class: errorClass(error) });
    }
  }
  return sent;
}
