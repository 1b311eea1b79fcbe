import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * The caller's side of a trace, through the official OpenTelemetry API: a no-op until the application
 * registers an SDK. Each `call` and `run` is one `execute_tool <tool>` span (GenAI conventions:
 * `gen_ai.tool.name`, `gen_ai.tool.call.id` = the operation ID), and every request the client sends
 * carries its W3C trace context (`traceparent`, `tracestate`), so the ledger's spans join the caller's
 * trace. Spans never carry arguments or results.
 */
const tracer = trace.getTracer('@tool-ledger/client');

/** Runs `fn` in the caller's span of one tool call; a throw marks the span failed by its class. */
export function toolCallSpan<T>(tool: string, operationId: string, fn: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(
    `execute_tool ${tool}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool,
        'gen_ai.tool.call.id': operationId,
      },
    },
    async (span) => {
      try {
        return await fn();
      } catch (error) {
        const type =
          error instanceof Error ? ((error as { code?: unknown }).code ?? error.name) : typeof error;
        span.setAttribute('error.type', String(type));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(type) });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** The active trace context as request headers (empty when nothing is traced). */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  if (trace.getSpanContext(context.active()) === undefined) return headers;
  propagation.inject(context.active(), headers);
  return headers;
}
