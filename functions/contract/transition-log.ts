/**
 * The transition log line as the construct's dashboard queries it (Logs Insights over the handlers'
 * log groups): the message every line carries. The line's fields are `TransitionLogLine`
 * (functions/observability/transition-log.ts). Pure data.
 */

/** `message` of every transition line (and of every observation in the same shape). */
export const TRANSITION_LOG_MESSAGE = 'operation transition';
