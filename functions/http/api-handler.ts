import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { readSetting, SETTINGS } from '../contract/environment';
import type { RouteId } from '../contract/routes';
import { AccessError, errorClass, LedgerError, NotFoundError, TenantThrottledError } from '../domain/errors';
import { newRequest } from '../engine/ledger-deps';
import { logger } from '../observability/logger';
import {
  inOperationSpan,
  inSpan,
  type OperationAction,
  parentFrom,
  SpanKind,
} from '../observability/tracing';
import type { Runtime } from '../wiring';
import type { Authenticator, Identity } from './identity';
import { problemResponse } from './problem';
import { HttpRequest } from './request';
import { matchRoute } from './router';
import { ROUTES } from './routes';

/** The routes that act on one operation, and what they do to it (the operation span's action). */
const OPERATION_ROUTES: Partial<Record<RouteId, OperationAction>> = {
  submit: 'execute_tool',
  approve: 'approval',
  resolve: 'resolution',
  lease: 'heartbeat',
  outcome: 'outcome',
  verdict: 'verdict',
};

/** An API Gateway REST proxy handler. */
export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/**
 * The HTTP front door (the contract, §5) over a runtime and an authenticator. Every request goes the same way:
 * authenticate (401), route (404, 405 with `Allow`), check the role (403), count the tenant's request
 * against its limit (429 `throttled`, when the deployment sets limits), then the route's own checks
 * and the engine. Every failure becomes a problem+json with a stable code; anything unexpected is a
 * bare 500 `internal_error`, logged once with its code and class (never its message). Metrics are
 * flushed at the end of every invocation.
 *
 * @example
 * ```ts
 * const handler = createApiHandler({ deps }, new BearerTokenAuthenticator('t=acme:agent'));
 * const response = await handler(event, context);
 * ```
 */
export function createApiHandler(
  runtime: Pick<Runtime, 'deps' | 'tenantLimiter'>,
  authenticator: Authenticator,
): ApiHandler {
  const { deps, tenantLimiter } = runtime;
  // On Lambda one invocation runs per sandbox at a time, so the context can sit on the shared logger
  // (every line, transitions included, gets `function_request_id`); local mode serves requests
  // concurrently, where it would name another request's ID.
  const perInvocationContext = !readSetting(process.env, SETTINGS.local);
  return (event, context) =>
    // One server span per request, continuing the caller's trace (`traceparent` header) when it sent one.
    inSpan(
      event.httpMethod ?? 'HTTP',
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': event.httpMethod ?? '' },
        parent: parentFrom(event.headers),
      },
      async (span) => {
        const response = await handle(event, context, (route, id) => {
          span.updateName(`${event.httpMethod} ${route}`);
          span.setAttribute('http.route', route);
          return id === undefined ? undefined : OPERATION_ROUTES[id];
        });
        span.setAttribute('http.response.status_code', response.statusCode);
        if (response.statusCode >= 500) span.setAttribute('error.type', String(response.statusCode));
        return response;
      },
    );

  async function handle(
    event: APIGatewayProxyEvent,
    context: Context,
    routed: (route: string, id: RouteId | undefined) => OperationAction | undefined,
  ): Promise<APIGatewayProxyResult> {
    if (perInvocationContext && context) logger.addContext(context);
    const req = newRequest(deps, context?.awsRequestId, remainingTime(context));
    let route = 'unmatched';
    try {
      let identity: Identity;
      try {
        identity = authenticator.authenticate(event);
      } catch (error) {
        const challenge =
          error instanceof AccessError && error.code === 'unauthenticated'
            ? { 'WWW-Authenticate': authenticator.challenge }
            : undefined;
        return problemResponse(error, req.requestId, {}, challenge);
      }
      const request = new HttpRequest(event);
      const match = matchRoute(ROUTES, request.method, request.path);
      if (match.kind === 'not_found')
        return problemResponse(new NotFoundError('no such route'), req.requestId);
      if (match.kind === 'method_not_allowed') {
        const error = new LedgerError('method_not_allowed', 'this route does not accept that method');
        return problemResponse(error, req.requestId, {}, { Allow: match.allow.join(', ') });
      }
      route = match.route.name;
      const action = routed(match.route.pattern, match.route.id);
      if (!match.route.roles.some((role) => identity.roles.has(role))) {
        throw new AccessError('forbidden', `this route needs the ${match.route.roles.join(' or ')} role`);
      }
      // Each tenant within its own requests per second, before any ledger work (nothing runs above it).
      if (tenantLimiter) {
        const verdict = await tenantLimiter.admit(identity.tenant, req.now);
        if (!verdict.admitted) {
          return problemResponse(
            new TenantThrottledError(verdict.limit),
            req.requestId,
            {},
            { 'Retry-After': '1' },
          );
        }
      }
      const ctx = { deps, req, request, identity, params: match.params };
      if (action === undefined) return await match.route.handle(ctx);
      return await inOperationSpan(action, undefined, () => match.route.handle(ctx));
    } catch (error) {
      const response = problemResponse(error, req.requestId);
      if (response.statusCode >= 500) {
        logger.error('request failed', {
          code: error instanceof LedgerError ? error.code : 'internal_error',
          error_class: errorClass(error),
          ...(error instanceof Error && error.cause !== undefined
            ? { cause_class: errorClass(error.cause) }
            : {}),
          route,
          request_id: req.requestId,
        });
      }
      return response;
    } finally {
      try {
        deps.metrics.flush();
      } catch (error) {
        logger.warn('metrics flush failed', { error_class: errorClass(error) });
      }
    }
  }
}

/**
 * The API Lambda's handler (API Gateway REST proxy integration; the contract, §5): the runtime (DynamoDB client,
 * tools, queue) and the authenticator are built on the first invocation and kept for the sandbox's
 * life. A configuration error answers 500 `internal_error` and is logged by class only, since its
 * message may quote configuration; the next invocation tries again. The gateway's upstream tools are
 * listed at the first invocation and relisted while one is missing.
 *
 * @example
 * ```ts
 * export const handler = lambdaApiHandler(() => {
 *   const runtime = buildRuntime(tools);
 *   return { runtime, authenticator: authenticatorFromEnv() };
 * });
 * ```
 */
export function lambdaApiHandler(
  build: () => {
    runtime: Pick<Runtime, 'deps' | 'refreshTools' | 'tenantLimiter'>;
    authenticator: Authenticator;
  },
): ApiHandler {
  let built: ApiHandler | undefined;
  let refreshTools: () => Promise<void> = async () => {};
  return async (event, context) => {
    if (!built) {
      try {
        const { runtime, authenticator } = build();
        built = createApiHandler(runtime, authenticator);
        refreshTools = runtime.refreshTools;
      } catch (error) {
        logger.error('api configuration failed', { code: 'internal_error', error_class: errorClass(error) });
        return problemResponse(error, context?.awsRequestId ?? 'unknown');
      }
    }
    await refreshTools();
    return built(event, context);
  };
}

function remainingTime(context: Context | undefined): (() => number) | undefined {
  if (typeof context?.getRemainingTimeInMillis !== 'function') return undefined;
  return () => context.getRemainingTimeInMillis();
}
