import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { CompletionEvent } from '../contract/completion-event';
import { inSpan, SpanKind } from '../observability/tracing';
import type { EventSink } from './event-sink';

/**
 * Completion events as messages on an SQS queue: local mode's events queue on fauxqs, which a test or
 * a user reads. The body is the event's JSON, exactly the `detail` of the EventBridge event on AWS.
 *
 * @example
 * ```ts
 * await new SqsEventSink(sqs, queueUrl).publish([event]);
 * ```
 */
export class SqsEventSink implements EventSink {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async publish(events: readonly CompletionEvent[]): Promise<void> {
    for (let i = 0; i < events.length; i += 10) {
      const chunk = events.slice(i, i + 10);
      await inSpan('send tool-ledger-events', { kind: SpanKind.PRODUCER }, async () => {
        const out = await this.client.send(
          new SendMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: chunk.map((event, n) => ({ Id: String(n), MessageBody: JSON.stringify(event) })),
          }),
        );
        if ((out.Failed ?? []).length > 0) throw new Error(`${out.Failed?.length} events were not accepted`);
      });
    }
  }
}
