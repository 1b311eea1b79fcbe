import { LogFormatter, Logger, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { readSetting, SETTINGS } from '../contract/environment';

/**
 * A log item that keeps `null` values. Powertools drops `null` and `''` attributes before printing;
 * the transition log must show `state_before: null` (a reservation) and `agent_run_id: null` so that
 * every line has the same fields (SPEC §9). Only `undefined` is dropped.
 */
class NullKeepingLogItem extends LogItem {
  override removeEmptyKeys(attributes: LogAttributes): LogAttributes {
    const kept: LogAttributes = {};
    for (const [key, value] of Object.entries(attributes)) {
      if (value !== undefined) kept[key] = value;
    }
    return kept;
  }
}

/** Powertools' standard JSON shape, printed through {@link NullKeepingLogItem}. */
class LedgerLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const base: LogAttributes = {
      level: attributes.logLevel,
      message: attributes.message,
      timestamp: this.formatTimestamp(attributes.timestamp),
      service: attributes.serviceName,
      cold_start: attributes.lambdaContext?.coldStart,
      function_name: attributes.lambdaContext?.functionName,
      function_request_id: attributes.lambdaContext?.awsRequestId,
      xray_trace_id: attributes.xRayTraceId,
    };
    return new NullKeepingLogItem({ attributes: base }).addAttributes(additional);
  }
}

/**
 * The one Powertools logger of a process. Everything that writes a log line goes through it, so the
 * service name, level and sampling are configured in one place (POWERTOOLS_* environment).
 */
export const logger = new Logger({
  serviceName: readSetting(process.env, SETTINGS.serviceName),
  logFormatter: new LedgerLogFormatter(),
});
