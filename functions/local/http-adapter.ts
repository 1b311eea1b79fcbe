import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { API_RESOURCES, API_STAGE } from '../contract/routes';
import { errorClass, ValidationError } from '../domain/errors';
import { problemResponse } from '../http/problem';
import { logger } from '../observability/logger';
import { invoke, LambdaTimeoutError, type LocalFunction } from './lambda-context';
import { loopbackRefusal } from './loopback-guard';

/**
 * What API Gateway (REST, Lambda proxy integration) does, on one machine: turn each Node HTTP request
 * into an `APIGatewayProxyEvent` (v1, with `multiValueHeaders`, a request ID, the body base64-encoded
 * when it is not valid UTF-8) for the same API handler Lambda runs, and turn its result back into an
 * HTTP response. Errors the gateway itself would produce (payload over its quota, a handler that
 * failed or timed out) are answered as the deployed gateway responses answer them: problem+json with a
 * stable code. A request target that is not a URL at all (`http://[/v1/tools`) is refused here with
 * 400 `validation_failed`, as a gateway refuses what it cannot route; every other target goes to the
 * handler, which authenticates and answers an unknown path with 404. Before any of it, a request whose
 * `Host` is not this machine's loopback with the API's port, or whose `Origin` is another (a DNS-rebinding
 * web page), is refused on every route, `/mcp` included: 403 `host_not_allowed` / `origin_not_allowed`
 * (loopback-guard.ts).
 */

/** The API handler's signature (functions/handlers/api.ts). */
export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/** API Gateway's payload quota for REST APIs; the handler enforces the contract's smaller body limit (256 KiB, §5) itself. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * An HTTP server on 127.0.0.1 in front of an API handler.
 *
 * @example
 * ```ts
 * const api = new HttpAdapter(handler, { name: 'api', timeoutMs: 29_000 });
 * const port = await api.listen(3000);
 * await api.close(10_000);
 * ```
 */
export class HttpAdapter {
  private readonly server: Server;
  private readonly inFlight = new Set<Promise<void>>();
  /** The port it listens on, which every request's `Host` must name. */
  private port = 0;

  constructor(
    private readonly handler: ApiHandler,
    private readonly fn: LocalFunction,
    private readonly maxBodyBytes: number = GATEWAY_MAX_BODY_BYTES,
  ) {
    this.server = createServer((req, res) => {
      const done = this.serve(req, res).catch((error: unknown) => {
        logger.error('local API adapter failed', { error_class: errorClass(error) });
        if (!res.headersSent) sendProblem(res, 500, 'internal_error', 'Internal server error', randomUUID());
        else res.destroy();
      });
      this.inFlight.add(done);
      void done.finally(() => this.inFlight.delete(done));
    });
    this.server.on('clientError', (_error, socket) => {
      // Unparseable HTTP never reaches the handler; answer it without crashing, then hang up.
      if (socket.writable) {
        const body = JSON.stringify({
          type: 'about:blank',
          title: 'Malformed HTTP request',
          status: 400,
          code: 'validation_failed',
        });
        socket.end(
          `HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else {
        socket.destroy();
      }
    });
  }

  /** Listens on 127.0.0.1:`port` (0: a free port) and returns the port. */
  async listen(port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this.port;
  }

  /** Stops accepting requests, waits for those in flight at most `graceMs`, then closes every connection. */
  async close(graceMs: number): Promise<boolean> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      Promise.all([...this.inFlight]).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    this.server.closeAllConnections();
    await closed;
    return drained;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const body = await readBody(req, this.maxBodyBytes);
    if (body === 'too_large') {
      res.setHeader('Connection', 'close');
      sendProblem(res, 413, 'payload_too_large', 'Request body exceeds the gateway limit', requestId);
      return;
    }
    const refusal = loopbackRefusal(req.headers, this.port);
    if (refusal) {
      writeResult(res, req.method ?? 'GET', problemResponse(refusal, requestId));
      return;
    }
    const target = parseTarget(req.url ?? '/');
    if (target === undefined) {
      writeResult(
        res,
        req.method ?? 'GET',
        problemResponse(
          new ValidationError('the request target is not a valid URL', [
            { path: 'target', message: 'invalid' },
          ]),
          requestId,
        ),
      );
      return;
    }
    const event = toEvent(req, target, body, requestId);
    let result: APIGatewayProxyResult;
    try {
      result = await invoke(this.fn, this.handler, event);
    } catch (error) {
      if (error instanceof LambdaTimeoutError) {
        sendProblem(res, 504, 'gateway_timeout', 'Endpoint request timed out', requestId);
      } else {
        logger.error('API handler failed', { error_class: errorClass(error) });
        sendProblem(res, 502, 'internal_error', 'Internal server error', requestId);
      }
      return;
    }
    writeResult(res, req.method ?? 'GET', result);
  }
}

/** Most bytes of an over-quota body read and dropped before the connection is cut instead. */
const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * Reads the whole body, or reports that it exceeds `limit` bytes. An over-quota body is read to its end
 * and dropped (up to {@link MAX_DRAIN_BYTES}), so that the client, still sending, receives the 413
 * instead of a connection reset.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      if (size > MAX_DRAIN_BYTES) {
        req.pause();
        resolve('too_large');
      }
    });
    req.on('end', () => resolve(size > limit ? 'too_large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A request target split into its path (still percent-encoded) and its query string (without `?`). */
export interface RequestTarget {
  path: string;
  query: string;
}

/**
 * Splits a request target, or returns `undefined` when it is not one a gateway could route. The
 * origin form (`/v1/tools?x=1`) is split as sent, never normalised: API Gateway delivers the path
 * still percent-encoded, `//` and `%zz` included, and the router refuses what matches no route. Only
 * the absolute form (`http://host/v1/tools`) goes through URL parsing, and a target of any other form
 * (`*`, `host:port`, an unparseable URL) is refused. Never throws: this runs before authentication, on
 * whatever bytes a client sent.
 *
 * @example
 * ```ts
 * parseTarget('/v1/operations?limit=2'); // { path: '/v1/operations', query: 'limit=2' }
 * parseTarget('http://[/v1/tools');      // undefined
 * ```
 */
export function parseTarget(target: string): RequestTarget | undefined {
  if (target.startsWith('/')) {
    const at = target.indexOf('?');
    if (at < 0) return { path: target, query: '' };
    // A fragment is never sent on the wire; if a client sends one anyway, it is not part of the query.
    return { path: target.slice(0, at), query: target.slice(at + 1).split('#')[0] as string };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return { path: url.pathname, query: url.search.slice(1) };
}

/**
 * The REST API proxy event for a request. Header names keep the case the client sent; `headers` holds
 * the last value of each, `multiValueHeaders` every value, as API Gateway does.
 */
export function toEvent(
  req: IncomingMessage,
  target: RequestTarget,
  body: Buffer,
  requestId: string,
): APIGatewayProxyEvent {
  const path = target.path;
  const method = (req.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  const names = new Map<string, string>();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const sent = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
    const name = names.get(sent.toLowerCase()) ?? sent;
    names.set(sent.toLowerCase(), name);
    headers[name] = value;
    append(multiValueHeaders, name, value);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [key, value] of new URLSearchParams(target.query)) {
    query[key] = value;
    append(multiQuery, key, value);
  }
  const { resource, pathParameters } = matchResource(path);
  const text = body.length === 0 ? null : utf8(body);
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters,
    stageVariables: null,
    body: body.length === 0 ? null : (text ?? body.toString('base64')),
    isBase64Encoded: body.length > 0 && text === undefined,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        user: null,
        userAgent: headerValue(req, 'user-agent'),
        userArn: null,
      },
      path: `/${API_STAGE}${path}`,
      stage: API_STAGE,
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: resource,
      domainName: headerValue(req, 'host') ?? '127.0.0.1',
    },
  };
}

/** The resource template a path matches, with its path parameters (decoded, as API Gateway passes them). */
function matchResource(pathname: string): {
  resource: string;
  pathParameters: Record<string, string> | null;
} {
  const parts = pathname.split('/');
  for (const resource of API_RESOURCES) {
    const template = resource.split('/');
    if (template.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < template.length && matches; i++) {
      const expected = template[i] as string;
      const actual = parts[i] as string;
      if (expected.startsWith('{')) {
        const decoded = decode(actual);
        if (actual === '' || decoded === undefined) matches = false;
        else params[expected.slice(1, -1)] = decoded;
      } else if (expected !== actual) {
        matches = false;
      }
    }
    if (matches) return { resource, pathParameters: Object.keys(params).length > 0 ? params : null };
  }
  return { resource: pathname, pathParameters: null };
}

function append(map: Record<string, string[]>, key: string, value: string): void {
  const values = map[key];
  if (values) values.push(value);
  else map[key] = [value];
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function utf8(body: Buffer): string | undefined {
  try {
    return strictUtf8.decode(body);
  } catch {
    return undefined;
  }
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}

function writeResult(res: ServerResponse, method: string, result: APIGatewayProxyResult): void {
  res.statusCode = result.statusCode;
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) {
    res.setHeader(name, values.map(String));
  }
  const body = result.isBase64Encoded
    ? Buffer.from(result.body ?? '', 'base64')
    : Buffer.from(result.body ?? '', 'utf8');
  res.setHeader('Content-Length', body.length);
  res.end(method === 'HEAD' ? undefined : body);
}

function sendProblem(
  res: ServerResponse,
  status: number,
  code: string,
  title: string,
  requestId: string,
): void {
  const body = JSON.stringify({ type: 'about:blank', title, status, code, request_id: requestId });
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
