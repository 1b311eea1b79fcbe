import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { errorClass, LedgerError } from '../domain/errors';
import type { TransitionLogLine } from './transition-log';

/**
 * OpenTelemetry spans of the ledger, through the official API (`@opentelemetry/api`): a no-op until the
 * deployment registers an SDK (the ADOT Lambda layer, or `NodeTracerProvider.register()` in a process
 * that runs local mode or the handlers). Spans follow the GenAI semantic conventions for tool execution
 * (`execute_tool <tool>`, `gen_ai.tool.name`, `gen_ai.tool.call.id` = the operation ID) with the
 * ledger's own `tool_ledger.*` attributes, plus a client span per DynamoDB, SQS, EventBridge and
 * downstream call.
 *
 * Spans carry identities, digests, states and codes, never arguments, results, headers or error
 * messages: the same rule as the transition log (the conventions' opt-in `gen_ai.tool.call.arguments`
 * and `gen_ai.tool.call.result` are never set), and an exception is recorded by its code or class only.
 *
 * W3C trace context comes in on HTTP headers, MCP `params._meta` and SQS message attributes
 * ({@link parentFrom}), and goes out on webhook headers, MCP upstream `_meta` and work messages
 * ({@link traceCarrier}), through the deployment's propagators (`propagation` of the API: W3C
 * `traceparent`/`tracestate` by default in every SDK and in ADOT).
 */

/** The tracer's name: the instrumentation scope of every span the ledger makes. */
export const TRACER_NAME = 'tool-ledger';

/** Attribute names the ledger sets: the GenAI conventions' and its own. */
export const TRACE_ATTRIBUTES = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  errorType: 'error.type',
  action: 'tool_ledger.action',
  tenant: 'tool_ledger.tenant',
  stateBefore: 'tool_ledger.state.before',
  stateAfter: 'tool_ledger.state.after',
  attempt: 'tool_ledger.attempt',
  replayed: 'tool_ledger.replayed',
  digest: 'tool_ledger.arguments_digest',
  outcomeCode: 'tool_ledger.outcome_code',
  agentRunId: 'tool_ledger.agent_run_id',
  targetClass: 'tool_ledger.target_class',
  transition: 'tool_ledger.transition',
  conditionFailed: 'tool_ledger.condition_failed',
} as const;

/** The GenAI operation of a ledger tool call. */
const EXECUTE_TOOL = 'execute_tool';

/**
 * What a request does to one operation: running or claiming it (`execute_tool`, the GenAI
 * operation), or one of the other transitions people and callers make (each a span named
 * `tool_ledger.<action> <tool>`).
 */
export type OperationAction =
  | 'execute_tool'
  | 'approval'
  | 'resolution'
  | 'heartbeat'
  | 'outcome'
  | 'verdict'
  | 'reconcile';

/** A W3C trace context as a carrier holds it (headers, `_meta`, message attributes). */
export type TraceCarrier = Record<string, string>;

const tracer = trace.getTracer(TRACER_NAME);

/** The operation spans this process has open, and what they have been told so far. */
const operationSpans = new WeakMap<Span, { base: string; before: boolean }>();

/** Reads a carrier whose keys may be in any case (HTTP headers as API Gateway delivers them). */
const caseless = {
  get(carrier: Record<string, unknown>, key: string): string | undefined {
    const wanted = key.toLowerCase();
    for (const name in carrier) {
      if (name.toLowerCase() !== wanted) continue;
      const value = carrier[name];
      if (typeof value === 'string') return value;
      if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
    }
    return undefined;
  },
  keys(carrier: Record<string, unknown>): string[] {
    return Object.keys(carrier);
  },
};

/** What a front door starts an operation's spans under. */
export interface TraceParent {
  context: Context;
  /** The span that was active when the request arrived (a Lambda layer's invocation span), linked. */
  links: Link[];
}

/**
 * The parent of a request's spans: the caller's trace context when the carrier holds one (the caller's
 * trace continues here, and the span already active, such as a Lambda layer's invocation span, is
 * linked), otherwise whatever is active. Without an SDK this is the active (empty) context.
 *
 * @example
 * ```ts
 * const parent = parentFrom(event.headers);            // HTTP
 * const parent = parentFrom(params._meta);              // MCP
 * const parent = parentFrom(sqsAttributes(record));     // SQS
 * ```
 */
export function parentFrom(carrier: Record<string, unknown> | null | undefined): TraceParent {
  const active = context.active();
  if (!carrier) return { context: active, links: [] };
  const extracted = propagation.extract(ROOT_CONTEXT, carrier, caseless);
  const remote = trace.getSpanContext(extracted);
  if (!remote || !trace.isSpanContextValid(remote)) return { context: active, links: [] };
  const current = trace.getSpanContext(active);
  const links = current && trace.isSpanContextValid(current) ? [{ context: current }] : [];
  return { context: extracted, links };
}

/** The SQS message attributes of a Lambda SQS record as a carrier (`traceparent`, `tracestate`). */
export function sqsCarrier(
  attributes: Record<string, { stringValue?: string | undefined } | undefined> | undefined,
): TraceCarrier {
  const carrier: TraceCarrier = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value?.stringValue !== undefined) carrier[name] = value.stringValue;
  }
  return carrier;
}

/**
 * The active trace context as a carrier (`traceparent` and, when set, `tracestate`) for a downstream
 * call: empty when nothing is traced.
 *
 * @example
 * ```ts
 * headers = { ...headers, ...traceCarrier() }; // webhook.post
 * ```
 */
export function traceCarrier(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  if (trace.getSpanContext(ctx) === undefined) return carrier;
  propagation.inject(ctx, carrier);
  return carrier;
}

/** A stored `traceparent` (a record's) as a context to start spans under, or undefined. */
export function contextOfTraceparent(traceparent: string | undefined): Context | undefined {
  if (traceparent === undefined) return undefined;
  const extracted = propagation.extract(ROOT_CONTEXT, { traceparent });
  const remote = trace.getSpanContext(extracted);
  return remote && trace.isSpanContextValid(remote) ? extracted : undefined;
}

/**
 * Runs `fn` in a span of one request to one operation (see {@link OperationAction}), under `parent`.
 * The span is named `execute_tool` or `tool_ledger.<action>` until the first transition or observation
 * names the tool ({@link traceTransition}); it ends when `fn` settles, with error status and
 * `error.type` (a stable code or a class name, never a message) when it throws.
 *
 * @example
 * ```ts
 * const result = await inOperationSpan('execute_tool', parent, () => submitOperation(deps, req, request));
 * ```
 */
export function inOperationSpan<T>(
  action: OperationAction,
  parent: TraceParent | undefined,
  fn: () => Promise<T>,
  links: Link[] = [],
): Promise<T> {
  const base = action === EXECUTE_TOOL ? EXECUTE_TOOL : `tool_ledger.${action}`;
  const attributes: Attributes = { [TRACE_ATTRIBUTES.action]: action };
  if (action === EXECUTE_TOOL) {
    attributes[TRACE_ATTRIBUTES.operationName] = EXECUTE_TOOL;
    attributes[TRACE_ATTRIBUTES.toolType] = 'extension';
  }
  return tracer.startActiveSpan(
    base,
    { kind: SpanKind.INTERNAL, attributes, links: [...(parent?.links ?? []), ...links] },
    parent?.context ?? context.active(),
    async (span) => {
      if (span.isRecording()) operationSpans.set(span, { base, before: false });
      try {
        return await fn();
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Runs `fn` in a span of its own (a front door's server or consumer span, a reconciler pass, a
 * client call), with error status and `error.type` when it throws. `fn` gets the span to add what it
 * learns (a status code, a condition that failed).
 *
 * @example
 * ```ts
 * await inSpan('DynamoDB.UpdateItem', { kind: SpanKind.CLIENT, attributes }, () => client.send(command));
 * ```
 */
export function inSpan<T>(
  name: string,
  options: { kind: SpanKind; attributes?: Attributes; parent?: TraceParent | undefined; links?: Link[] },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(
    name,
    {
      kind: options.kind,
      ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
      links: [...(options.parent?.links ?? []), ...(options.links ?? [])],
    },
    options.parent?.context ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Marks a span failed by the error's stable code, or its class: never its message. */
export function failed(span: Span, error: unknown): void {
  const type = error instanceof LedgerError ? error.code : errorClass(error);
  span.setAttribute(TRACE_ATTRIBUTES.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/**
 * Tells the active operation span about one transition or observation, from its log line: the tool
 * (which names the span), the operation ID, tenant, digest, attempt, the state before the first
 * transition and after the last, whether it replayed, the outcome code, and one span event per line.
 * Nothing happens outside an operation span (or without an SDK).
 */
export function traceTransition(line: TransitionLogLine): void {
  const span = trace.getActiveSpan();
  const known = span === undefined ? undefined : operationSpans.get(span);
  if (span === undefined || known === undefined) return;
  const attributes: Attributes = {
    [TRACE_ATTRIBUTES.toolName]: line.tool_name,
    [TRACE_ATTRIBUTES.toolCallId]: line.operation_id,
    [TRACE_ATTRIBUTES.tenant]: line.tenant,
    [TRACE_ATTRIBUTES.digest]: line.arguments_digest,
    [TRACE_ATTRIBUTES.attempt]: line.attempt_number,
    [TRACE_ATTRIBUTES.stateAfter]: line.state_after,
    [TRACE_ATTRIBUTES.targetClass]: line.target_class,
  };
  if (!known.before) {
    attributes[TRACE_ATTRIBUTES.stateBefore] = line.state_before ?? 'none';
    known.before = true;
    span.updateName(`${known.base} ${line.tool_name}`);
  }
  if (line.replayed) attributes[TRACE_ATTRIBUTES.replayed] = true;
  if (line.outcome_code !== null) attributes[TRACE_ATTRIBUTES.outcomeCode] = line.outcome_code;
  if (line.agent_run_id !== null) attributes[TRACE_ATTRIBUTES.agentRunId] = line.agent_run_id;
  span.setAttributes(attributes);
  const event: Attributes = {
    [TRACE_ATTRIBUTES.stateBefore]: line.state_before ?? 'none',
    [TRACE_ATTRIBUTES.stateAfter]: line.state_after,
    [TRACE_ATTRIBUTES.attempt]: line.attempt_number,
    [TRACE_ATTRIBUTES.replayed]: line.replayed,
  };
  if (line.outcome_code !== null) event[TRACE_ATTRIBUTES.outcomeCode] = line.outcome_code;
  span.addEvent(
    line.state_before === line.state_after ? 'tool_ledger.observation' : 'tool_ledger.transition',
    event,
  );
}

export { SpanKind } from '@opentelemetry/api';
