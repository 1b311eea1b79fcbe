import type { CompletionEvent } from '../contract/completion-event';

/**
 * Where completion events go: EventBridge on AWS (functions/events/eventbridge-sink.ts), the local
 * events queue in local mode (functions/events/sqs-event-sink.ts). `publish` resolves once every
 * event is accepted and throws otherwise (the caller sends them again, with the same IDs).
 */
export interface EventSink {
  publish(events: readonly CompletionEvent[]): Promise<void>;
}
