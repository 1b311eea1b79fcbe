import type { EventBridgeClient, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { type CompletionEvent, EVENT_DETAIL_TYPE, EVENT_SOURCE } from '../contract/completion-event';
import { traceAwsClient } from '../observability/aws-client-spans';
import type { EventSink } from './event-sink';

/** Most entries PutEvents takes in one call. */
const MAX_ENTRIES = 10;

/**
 * The PutEvents entries of some events: source `tool-ledger`, the detail type, the event's JSON as the
 * detail (rules can match `detail.tenant`, `detail.state`, `detail.tool`), and the write's time.
 */
export function putEventsEntries(
  events: readonly CompletionEvent[],
  busName: string,
): PutEventsRequestEntry[] {
  return events.map((event) => ({
    EventBusName: busName,
    Source: EVENT_SOURCE,
    DetailType: EVENT_DETAIL_TYPE,
    Detail: JSON.stringify(event),
    Time: new Date(event.event_time),
  }));
}

/**
 * Completion events to an EventBridge bus. An entry EventBridge refuses (`FailedEntryCount`) fails the
 * whole publish, so that the stream delivers the records again (with the same event IDs).
 */
export class EventBridgeSink implements EventSink {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {
    traceAwsClient(client, 'EventBridge');
  }

  async publish(events: readonly CompletionEvent[]): Promise<void> {
    const { PutEventsCommand } = await import('@aws-sdk/client-eventbridge');
    for (let i = 0; i < events.length; i += MAX_ENTRIES) {
      const out = await this.client.send(
        new PutEventsCommand({ Entries: putEventsEntries(events.slice(i, i + MAX_ENTRIES), this.busName) }),
      );
      if ((out.FailedEntryCount ?? 0) > 0) {
        const code = out.Entries?.find((e) => e.ErrorCode !== undefined)?.ErrorCode ?? 'unknown';
        throw new Error(`EventBridge refused ${out.FailedEntryCount} events (${code})`);
      }
    }
  }
}
