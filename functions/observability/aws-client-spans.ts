import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { errorClass } from '../domain/errors';
import { TRACE_ATTRIBUTES, TRACER_NAME } from './tracing';

/** The AWS SDK client shape this needs: its middleware stack. */
interface MiddlewareClient {
  middlewareStack: {
    add(
      middleware: (
        next: (args: unknown) => Promise<unknown>,
        context: { commandName?: string; clientName?: string },
      ) => (args: unknown) => Promise<unknown>,
      options: { step: 'initialize'; name: string; override?: boolean },
    ): void;
  };
}

/** The clients already given span middleware (a client shared by several stores gets it once). */
const traced = new WeakSet<object>();

/** Name of the middleware, stable so that adding it twice replaces rather than duplicates. */
const MIDDLEWARE = 'toolLedgerClientSpan';

/**
 * Gives an AWS SDK client one client span per command (`DynamoDB.UpdateItem`, `EventBridge.PutEvents`),
 * with the service and operation and, on failure, the error's class (a failed DynamoDB condition is
 * `ConditionalCheckFailedException`: an answer, recorded as `tool_ledger.condition_failed`, not an
 * error). Spans carry no table item, key or payload. A no-op while no tracing SDK is registered.
 *
 * @example
 * ```ts
 * traceAwsClient(client, 'DynamoDB');
 * ```
 */
export function traceAwsClient(client: object, service: string): void {
  if (traced.has(client)) return;
  const stack = (client as Partial<MiddlewareClient>).middlewareStack;
  if (stack === undefined) return;
  traced.add(client);
  const tracer = trace.getTracer(TRACER_NAME);
  (client as MiddlewareClient).middlewareStack.add(
    (next, context) => (args) => {
      const operation = (context.commandName ?? 'Command').replace(/Command$/, '');
      return tracer.startActiveSpan(
        `${service}.${operation}`,
        {
          kind: SpanKind.CLIENT,
          attributes: { 'rpc.system': 'aws-api', 'rpc.service': service, 'rpc.method': operation },
        },
        async (span) => {
          try {
            return await next(args);
          } catch (error) {
            const type = errorClass(error);
            if (type === 'ConditionalCheckFailedException')
              span.setAttribute(TRACE_ATTRIBUTES.conditionFailed, true);
            else {
              span.setAttribute(TRACE_ATTRIBUTES.errorType, type);
              span.setStatus({ code: SpanStatusCode.ERROR, message: type });
            }
            throw error;
          } finally {
            span.end();
          }
        },
      );
    },
    { step: 'initialize', name: MIDDLEWARE, override: true },
  );
}
