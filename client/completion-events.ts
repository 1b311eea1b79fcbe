import type { OperationState } from './api-types';
import { isRecord } from './wire';

/**
 * Completion events as the client reads them: one per transition a caller or a person waits for
 * (a terminal state, `awaiting_approval`, `needs_reconciliation`). Identities, digest, states and the
 * outcome code, never arguments or results: read the operation for those.
 */
export interface CompletionEvent {
  /** The same on every delivery of one transition: keep the IDs you handled to see each once. */
  event_id: string;
  /** When the transition was written. */
  event_time: string;
  tenant: string;
  operation_id: string;
  agent_run_id: string | null;
  tool: string;
  state: OperationState;
  previous_state: OperationState | null;
  attempt: number;
  arguments_digest: string;
  outcome_code: string | null;
}

/** One message of an events queue, as an {@link EventQueue} hands it over. */
export interface EventMessage {
  /** The message body: the event's JSON (local mode) or an EventBridge envelope with it as `detail`. */
  body: string;
  /** Removes the message from the queue; called only for messages of the operation waited for. */
  delete(): Promise<void>;
}

/**
 * Where `ToolLedgerClient.waitForEvent` reads completion events: any queue that can hand over a batch
 * of messages, waiting for them at most `waitMs`. `sqsEventQueue` from `@tool-ledger/client/sqs`
 * builds one from an `SQSClient` and a queue URL; anything else (a test double, another broker) is
 * these few lines.
 *
 * @example
 * ```ts
 * const events: EventQueue = {
 *   async receive({ waitMs }) {
 *     const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: Math.ceil(waitMs / 1000) }));
 *     return (out.Messages ?? []).map((m) => ({ body: m.Body ?? '', delete: () => deleteIt(m) }));
 *   },
 * };
 * ```
 */
export interface EventQueue {
  /** Resolves with the messages that arrived within `waitMs` (possibly none). */
  receive(options: { waitMs: number; signal?: AbortSignal | undefined }): Promise<EventMessage[]>;
}

/** EventBridge `source` of every ledger event. */
export const EVENT_SOURCE = 'tool-ledger';

/**
 * The completion event in a message body: the event itself (local mode's events queue) or the
 * EventBridge envelope around it (an SQS queue subscribed to the bus, the event as `detail`).
 * Anything else is not a ledger event: undefined.
 *
 * @example
 * ```ts
 * completionEventOfBody('{"source":"tool-ledger","detail":{"event_id":"…",…}}'); // the detail
 * completionEventOfBody('hello'); // undefined
 * ```
 */
export function completionEventOfBody(body: string): CompletionEvent | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (isRecord(parsed) && parsed.source === EVENT_SOURCE && isRecord(parsed.detail)) parsed = parsed.detail;
  if (
    !isRecord(parsed) ||
    typeof parsed.event_id !== 'string' ||
    typeof parsed.tenant !== 'string' ||
    typeof parsed.operation_id !== 'string' ||
    typeof parsed.state !== 'string'
  )
    return undefined;
  return parsed as unknown as CompletionEvent;
}
