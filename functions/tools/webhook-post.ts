import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { isIP } from 'node:net';
import canonicalize from 'canonicalize';
import * as z from 'zod/mini';
import { parseIJson } from '../domain/i-json';
import { defineTool, NotAppliedError, TerminalToolError, UncertainOutcomeError } from '../domain/tool';
import { inSpan, SpanKind, traceCarrier } from '../observability/tracing';
import { type AllowedOrigin, OriginPolicy } from './origin-policy';
import type { ToolEnvironment } from './registry';
import { ReservedEndpoints } from './reserved-endpoints';

/** One resolved address of a host. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to all its addresses. Injected in tests (to simulate a name that resolves to
 * a private address); the default is the system resolver (`dns.lookup`, like every other client).
 */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<ResolvedAddress[]>;

/** Caller header names that may reach the wire (the schema's rule, applied again at execute). */
const CALLER_HEADER = /^x-[a-z0-9-]+$/;

/** Options of {@link webhookPost}. */
export interface WebhookPostOptions {
  /** @default the system resolver (`dns.lookup` with `all: true`) */
  resolve?: Resolver;
  /** Most response-body bytes read and kept; the rest is dropped and `truncated` set. @default 16384 */
  maxResponseBytes?: number;
}

/** What `webhook.post` returns for a 2xx answer. */
export interface WebhookResult {
  /** The HTTP status (200–299). */
  status: number;
  /** The body: parsed JSON when it is JSON, text otherwise, `null` when empty. */
  body: unknown;
  /** The body was cut at the size limit, or its transfer was interrupted after the status arrived. */
  truncated: boolean;
}

/** Most headers a caller may add. */
export const MAX_CALLER_HEADERS = 20;
/** Longest URL accepted, in characters. */
export const MAX_URL_CHARS = 2048;
/** Largest JSON text of a result's body kept by `sanitizeResult`, in characters. */
const MAX_STORED_BODY_CHARS = 16 * 1024;
/** Deepest JSON body kept as JSON; deeper bodies are kept as text. */
const MAX_BODY_DEPTH = 32;

/**
 * `x-` headers a caller still may not set: they make proxies and frameworks trust a forged client
 * address or host, rewrite the method or path, or carry a second idempotency key that would let a
 * caller defeat the downstream deduplication the ledger's key provides.
 */
const RESERVED_X_HEADERS = new Set([
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-server',
  'x-real-ip',
  'x-client-ip',
  'x-original-url',
  'x-rewrite-url',
  'x-http-method',
  'x-http-method-override',
  'x-method-override',
  'x-idempotency-key',
]);

async function systemResolve(hostname: string): Promise<ResolvedAddress[]> {
  const addresses = await dnsLookup(hostname, { all: true, verbatim: true });
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function headersSchema() {
  const names = z
    .string()
    .check(
      z.regex(/^[xX]-[a-zA-Z0-9-]+$/, 'header names must match x-[a-z0-9-]+'),
      z.maxLength(64),
      z.describe('x- header name (case-insensitive)'),
    );
  const values = z
    .string()
    .check(z.maxLength(1024), z.regex(/^[\x20-\x7e]*$/, 'header values must be printable ASCII'));
  return z.pipe(
    z
      .record(names, values)
      .check(
        z.describe(`Extra request headers, at most ${MAX_CALLER_HEADERS}, names matching x-[a-z0-9-]+.`),
      ),
    z.transform((headers: Record<string, string>, ctx) => {
      const names = Object.keys(headers);
      if (names.length > MAX_CALLER_HEADERS) {
        ctx.issues.push({ code: 'custom', message: `at most ${MAX_CALLER_HEADERS} headers`, input: headers });
        return z.NEVER;
      }
      const normalized: Record<string, string> = {};
      for (const name of names) {
        const lower = name.toLowerCase();
        if (RESERVED_X_HEADERS.has(lower)) {
          ctx.issues.push({
            code: 'custom',
            message: 'this header is reserved',
            path: [name],
            input: headers,
          });
        } else if (lower in normalized) {
          ctx.issues.push({
            code: 'custom',
            message: 'header repeated (names are case-insensitive)',
            path: [name],
            input: headers,
          });
        } else {
          // Receivers strip surrounding whitespace; strip it here so that it cannot change the digest.
          normalized[lower] = (headers[name] ?? '').trim();
        }
      }
      return ctx.issues.length > 0 ? z.NEVER : normalized;
    }),
  );
}

/**
 * The arguments schema of `webhook.post` for one deployment: the URL is checked against the allow
 * list (so a refused URL is a validation error, with no record) and normalized (WHATWG form, no
 * fragment); header names are lowercased; empty `headers` are dropped.
 */
export function webhookPostArguments(policy: OriginPolicy) {
  const url = z.pipe(
    z
      .string()
      .check(
        z.minLength(1),
        z.maxLength(MAX_URL_CHARS),
        z.describe('Absolute http(s) URL on an allowed origin; no credentials.'),
      ),
    z.transform((raw: string, ctx) => {
      const verdict = policy.checkUrl(raw);
      if (!verdict.ok) {
        ctx.issues.push({ code: 'custom', message: `url ${verdict.reason}`, input: raw });
        return z.NEVER;
      }
      // The fragment never reaches the server: drop it so it cannot change the digest.
      verdict.url.hash = '';
      return verdict.url.href;
    }),
  );
  return z.pipe(
    z.strictObject({
      url,
      json: z.json().check(z.describe('The JSON body to POST (sent in RFC 8785 canonical form).')),
      headers: z.optional(headersSchema()),
    }),
    z.transform(({ url, json, headers }) =>
      headers === undefined || Object.keys(headers).length === 0 ? { url, json } : { url, json, headers },
    ),
  );
}

/** The arguments of `webhook.post` after validation. */
export type WebhookPostArguments = z.output<ReturnType<typeof webhookPostArguments>>;

/**
 * Resolves the URL's host once and checks every address against the policy. A literal IP is its own
 * answer. An address outside the policy is a terminal refusal, not a not-applied retry: nothing was
 * sent, but the same name will resolve the same way on the next attempt, and a retried refusal only
 * gives a rebinding attacker more tries.
 */
async function resolveChecked(
  url: URL,
  origin: AllowedOrigin,
  policy: OriginPolicy,
  resolve: Resolver,
  signal: AbortSignal,
): Promise<ResolvedAddress[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  const port = urlPort(url);
  let addresses: ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      // The lookup cannot be cancelled, but the attempt stops waiting for it at the deadline.
      addresses = await untilAborted(resolve(host, signal), signal);
    } catch {
      if (signal.aborted)
        throw new NotAppliedError('aborted_before_send', 'the attempt was aborted before connecting');
      throw new NotAppliedError('dns_failure', 'the host name could not be resolved; nothing was sent');
    }
    if (addresses.length === 0)
      throw new NotAppliedError('dns_failure', 'the host name has no addresses; nothing was sent');
  }
  if (addresses.some(({ address }) => policy.reservedEndpoint(address, port))) throw reservedRefusal();
  if (!addresses.every(({ address }) => policy.addressAllowed(origin, address))) {
    throw new TerminalToolError(
      'address_not_allowed',
      'the host resolves to an address the allow list does not permit (private, link-local or loopback)',
    );
  }
  return addresses;
}

function urlPort(url: URL): number {
  return url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
}

/**
 * Terminal, like any address refusal: nothing was sent, and the same name reaches the same endpoint
 * next time.
 */
function reservedRefusal(): TerminalToolError {
  return new TerminalToolError(
    'endpoint_reserved',
    'the URL reaches a service endpoint of the ledger itself, which tools never reach',
  );
}

/** Marks the socket error raised when the connected peer turns out to be a reserved endpoint. */
class ReservedPeerError extends Error {
  constructor() {
    super('connected to a reserved endpoint');
    this.name = 'ReservedPeerError';
  }
}

/** A `lookup` for the socket that answers with the checked addresses only: no second DNS query. */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all)
      callback(
        null,
        addresses.map(({ address, family }) => ({ address, family })),
      );
    else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
  };
}

/** How far one request got: decides whether a failure is "nothing sent" or "maybe received". */
type Phase = 'connecting' | 'handshaking' | 'sent' | 'response';

function failureBefore(phase: Phase, error: NodeJS.ErrnoException): Error {
  if (phase === 'connecting') {
    return error.code === 'ECONNREFUSED'
      ? new NotAppliedError('connection_refused', 'the connection was refused; nothing was sent')
      : new NotAppliedError(
          'connect_failed',
          `the connection could not be made (${error.code ?? 'error'}); nothing was sent`,
        );
  }
  if (phase === 'handshaking') {
    return new NotAppliedError('tls_handshake_failed', 'the TLS handshake failed; nothing was sent');
  }
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') {
    return new UncertainOutcomeError(
      'connection_reset',
      'the connection was reset after the request was sent',
    );
  }
  if (error.code === 'ETIMEDOUT')
    return new UncertainOutcomeError('timeout', 'the request timed out after it was sent');
  if (error.code?.startsWith('HPE_')) {
    return new UncertainOutcomeError('invalid_response', 'the server answered with an invalid HTTP response');
  }
  return new UncertainOutcomeError(
    'network_error',
    `the connection failed after the request was sent (${error.code ?? 'error'})`,
  );
}

function abortFailure(phase: Phase, signal: AbortSignal): Error {
  if (phase === 'connecting' || phase === 'handshaking') {
    return new NotAppliedError('aborted_before_send', 'the attempt was aborted before the request was sent');
  }
  const timedOut = (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError';
  return new UncertainOutcomeError(
    timedOut ? 'timeout' : 'aborted',
    'the attempt was aborted after the request was sent; the server may have received it',
  );
}

/** Maps a non-2xx status to its outcome (the contract, §4). */
function statusFailure(status: number): Error {
  const code = `http_${status}`;
  if (status >= 300 && status < 500 && status !== 408 && status !== 409 && status !== 429) {
    const what = status < 400 ? 'a redirect, which is never followed' : 'a client error';
    return new TerminalToolError(code, `the server answered ${status} (${what})`, { status });
  }
  return new UncertainOutcomeError(code, `the server answered ${status}; the request may have been applied`, {
    status,
  });
}

function decodeBody(bytes: Buffer, contentType: string | undefined, truncated: boolean): unknown {
  if (bytes.length === 0) return null;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (!truncated && /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType ?? '')) {
    try {
      // I-JSON only (no duplicate keys, 1e999, -0 or lone surrogates): the result must store as JSON.
      return parseIJson(text, { maxDepth: MAX_BODY_DEPTH, maxBytes: bytes.length });
    } catch {
      // Not JSON after all: keep the text.
    }
  }
  return text;
}

interface Request {
  url: URL;
  addresses: readonly ResolvedAddress[];
  /** Checked again against the socket's actual peer, the moment it connects. */
  policy: OriginPolicy;
  headers: Record<string, string>;
  body: Buffer;
  signal: AbortSignal;
  maxResponseBytes: number;
}

/**
 * Sends one POST over a fresh connection to the checked addresses and classifies the outcome. The
 * phase decides what a failure means: before the TCP connection (or, for https, before the TLS
 * handshake completed) nothing was sent; after it, the server may have the request.
 */
function send(request: Request): Promise<WebhookResult> {
  const { url, signal } = request;
  const tls = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    let phase: Phase = 'connecting';
    let settled = false;
    let finishBody: ((interrupted: boolean) => void) | undefined;
    const settle = (action: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      action();
    };
    const options: https.RequestOptions = {
      method: 'POST',
      host,
      port: urlPort(url),
      path: `${url.pathname}${url.search}`,
      headers: request.headers,
      agent: false, // a fresh connection, so the pinned lookup is always the one used
      lookup: pinnedLookup(request.addresses),
      ...(tls && isIP(host) === 0 ? { servername: host } : {}),
    };
    const req = (tls ? https : http).request(options);
    const onAbort = () => {
      if (finishBody) finishBody(true);
      else settle(() => reject(abortFailure(phase, signal)));
      req.destroy();
    };
    req.on('socket', (socket: Socket) => {
      // Registered before the request's own write (which waits for 'connect' too), so a refused peer
      // is dropped before a byte of the request reaches it.
      socket.once('connect', () => {
        const peer = socket.remoteAddress;
        const peerPort = socket.remotePort;
        if (peer === undefined || peerPort === undefined || request.policy.reservedEndpoint(peer, peerPort)) {
          socket.destroy(new ReservedPeerError());
        }
      });
      socket.once('connect', () => {
        if (phase === 'connecting') phase = tls ? 'handshaking' : 'sent';
      });
      if (tls) {
        socket.once('secureConnect', () => {
          if (phase === 'connecting' || phase === 'handshaking') phase = 'sent';
        });
      }
    });
    req.on('response', (res) => {
      phase = 'response';
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.destroy();
        req.destroy();
        settle(() => reject(statusFailure(status)));
        return;
      }
      // From here the outcome is known: the server accepted the request. Body trouble only truncates.
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      finishBody = (interrupted) =>
        settle(() => {
          const body = Buffer.concat(chunks).subarray(0, request.maxResponseBytes);
          const cut = truncated || interrupted;
          resolve({ status, body: decodeBody(body, res.headers['content-type'], cut), truncated: cut });
        });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size > request.maxResponseBytes) {
          truncated = true;
          finishBody?.(false);
          res.destroy();
        }
      });
      res.on('end', () => finishBody?.(false));
      res.on('error', () => finishBody?.(true));
      res.on('close', () => finishBody?.(!res.complete));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (finishBody) finishBody(true);
      else if (error instanceof ReservedPeerError) settle(() => reject(reservedRefusal()));
      else settle(() => reject(signal.aborted ? abortFailure(phase, signal) : failureBefore(phase, error)));
    });
    if (signal.aborted) {
      settle(() => reject(abortFailure('connecting', signal)));
      req.destroy();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    req.end(request.body);
  });
}

/** Cuts a result's body so that the stored result stays well under the ledger's 32 KiB. */
function sanitizeWebhookResult(result: unknown): unknown {
  const value = result as WebhookResult;
  const serialized = JSON.stringify(value.body) ?? 'null';
  if (serialized.length <= MAX_STORED_BODY_CHARS) return value;
  let text = typeof value.body === 'string' ? value.body : serialized;
  // JSON escaping can grow a string up to 6×: shrink until the serialized form fits.
  while ((JSON.stringify(text) ?? '').length > MAX_STORED_BODY_CHARS) {
    text = text.slice(0, Math.floor(text.length * 0.75));
  }
  return { status: value.status, body: text, truncated: true };
}

/**
 * `webhook.post`: POSTs canonical JSON to an allowed origin with `Idempotency-Key: "<downstream
 * key>"` (an RFC 8941 string), never following redirects. Outcomes (the contract, §4): 2xx succeeded; 3xx
 * and 4xx other than 408/409/429 terminal (`http_<status>`, status kept); DNS failure, connection
 * refused, TLS handshake failure, abort before connecting → not applied; reset or abort after
 * sending, 408, 409, 429, 5xx → uncertain.
 *
 * No `reconcile`: a webhook cannot be asked whether it received a request, and "re-send with the
 * same key" is an execute, which the reconciler must never call. Instead `downstreamIdempotent` is
 * true for origins listed in `env.webhookIdempotentOrigins`, so the reconciler (the contract, §7) may move an
 * uncertain call there to `failed_retryable`, and the retry reuses the same key; other origins go to
 * `needs_reconciliation` for an operator.
 *
 * @example
 * ```ts
 * const tool = webhookPost({ workspaceRoot: '', webhookAllow: ['http://127.0.0.1'], local: true });
 * const args = tool.schema.parse({ url: 'http://127.0.0.1:8080/hook', json: { ok: true } });
 * await tool.execute(args, ctx); // { status: 200, body: …, truncated: false }
 * ```
 */
export function webhookPost(
  env: Pick<ToolEnvironment, 'webhookAllow' | 'webhookIdempotentOrigins' | 'local' | 'reservedEndpoints'>,
  options: WebhookPostOptions = {},
) {
  const reserved = new ReservedEndpoints(env.reservedEndpoints ?? []);
  const policy = new OriginPolicy(env.webhookAllow, { local: env.local, reserved });
  const idempotent = new OriginPolicy(env.webhookIdempotentOrigins ?? [], { local: env.local });
  const resolve = options.resolve ?? systemResolve;
  const maxResponseBytes = options.maxResponseBytes ?? 16 * 1024;
  return defineTool({
    name: 'webhook.post',
    description:
      'POSTs a JSON body to an allowed webhook URL, with an Idempotency-Key header derived from the ' +
      'operation. Redirects are not followed. Optional x- headers may be added.',
    effect: 'write',
    targetClass: 'http',
    schema: webhookPostArguments(policy),

    downstreamIdempotent(args) {
      return idempotent.match(new URL(args.url)) !== undefined;
    },

    async execute(args, ctx): Promise<WebhookResult> {
      if (ctx.signal.aborted)
        throw new NotAppliedError('aborted_before_send', 'the attempt was aborted before connecting');
      const url = new URL(args.url);
      // Checked again: a queued call may run after the allow list has shrunk.
      const origin = policy.match(url);
      if (origin === undefined || url.username !== '' || url.password !== '') {
        throw new TerminalToolError(
          'origin_not_allowed',
          'the URL is not on the allow list of this deployment',
        );
      }
      const addresses = await resolveChecked(url, origin, policy, resolve, ctx.signal);
      // The body is canonical (RFC 8785) so that every attempt sends the same bytes: servers that
      // fingerprint the payload of an Idempotency-Key would otherwise see a "different" request.
      const body = Buffer.from(canonicalize(args.json) ?? 'null', 'utf8');
      // Arguments normally come through the schema; filter again so that no path around it (a stored
      // record from an older version, a direct call) can set Host, framing headers or the key.
      const callerHeaders = Object.entries(args.headers ?? {}).filter(
        ([name]) => CALLER_HEADER.test(name) && !RESERVED_X_HEADERS.has(name),
      );
      const headers: Record<string, string> = {
        ...Object.fromEntries(callerHeaders),
        accept: 'application/json, text/plain;q=0.9, */*;q=0.1',
        'accept-encoding': 'identity',
        connection: 'close',
        'content-type': 'application/json',
        'content-length': String(body.length),
        'idempotency-key': `"${ctx.downstreamKey}"`,
        'user-agent': 'tool-ledger',
      };
      // One client span per POST; the target receives the trace context (`traceparent`, `tracestate`).
      return inSpan(
        'POST',
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'http.request.method': 'POST',
            'server.address': url.hostname,
            'server.port': urlPort(url),
          },
        },
        async (span) => {
          const out = await send({
            url,
            addresses,
            policy,
            headers: { ...headers, ...traceCarrier() },
            body,
            signal: ctx.signal,
            maxResponseBytes,
          });
          span.setAttribute('http.response.status_code', out.status);
          return out;
        },
      );
    },

    sanitizeResult: sanitizeWebhookResult,
  });
}
