import type { CompletionEvent } from '../contract/completion-event';
import type { EventSink } from './event-sink';

/**
 * A sink built at its first publish: the module behind it (an SDK client) is loaded only by a process
 * that sends an event, never at a cold start.
 */
export function lazySink(build: () => Promise<EventSink>): EventSink {
  let sink: Promise<EventSink> | undefined;
  return {
    async publish(events: readonly CompletionEvent[]) {
      sink ??= build();
      await (await sink).publish(events);
    },
  };
}
