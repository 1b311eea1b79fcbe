import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { readSetting, SETTINGS } from '../contract/environment';
import type { EventSink } from '../events/event-sink';
import { EventBridgeSink } from '../events/eventbridge-sink';
import { createStreamEventsHandler } from '../events/stream-events';

let sink: EventSink | undefined;

/**
 * The events Lambda (AWS): the ledger table's stream to completion events on the deployment's
 * EventBridge bus (`TOOL_LEDGER_EVENT_BUS`).
 */
export const handler = createStreamEventsHandler(() => {
  sink ??= new EventBridgeSink(new EventBridgeClient({}), readSetting(process.env, SETTINGS.eventBus));
  return sink;
});
