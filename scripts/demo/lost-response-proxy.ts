import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy on 127.0.0.1 that loses responses on purpose: it forwards a request whole, lets the
 * upstream finish it (the effect happens), then closes the client's socket instead of relaying the
 * answer. To the client this is a network failure after sending, the case where it cannot know
 * whether its request took effect. Armed drops strike once each; everything else passes through.
 * When the upstream cannot be reached (it was killed), the client's socket is closed too, like a
 * dead load balancer target. The upstream can be swapped, so a restarted stack on a new port keeps
 * the client's endpoint.
 */

/** What a drop rule sees of a request. */
export interface ProxiedRequest {
  method: string;
  path: string;
  /** The `Idempotency-Key` header without its sf-string quotes, if any. */
  idempotencyKey: string | undefined;
}

/** A running proxy. */
export interface LostResponseProxy {
  /** `http://127.0.0.1:<port>`: give this to the client as its endpoint. */
  url: string;
  /** Where requests go from now on (`http://127.0.0.1:<port>`). */
  setUpstream(url: string): void;
  /** Loses the response of the next request that `matches`, once. */
  loseNextResponse(matches: (request: ProxiedRequest) => boolean): void;
  /** Loses the response of the next request carrying this operation ID as its `Idempotency-Key`. */
  loseNextResponseFor(operationId: string): void;
  /** Responses lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

/**
 * Starts a proxy in front of `upstream`.
 *
 * @example
 * ```ts
 * const proxy = await startLostResponseProxy(stack.api);
 * proxy.loseNextResponseFor('run-1:s2:c0');
 * const client = new ToolLedgerClient({ endpoint: proxy.url, signer: bearerToken(stack.tokens.agent) });
 * await client.call({ operationId: 'run-1:s2:c0', ... }); // attempts: 2, replayed: true
 * ```
 */
export async function startLostResponseProxy(upstream: string): Promise<LostResponseProxy> {
  let target = new URL(upstream);
  let rules: ((request: ProxiedRequest) => boolean)[] = [];
  let lost = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const seen: ProxiedRequest = {
        method: req.method ?? 'GET',
        path: new URL(req.url ?? '/', 'http://127.0.0.1').pathname,
        idempotencyKey: unquote(req.headers['idempotency-key']),
      };
      const rule = rules.find((r) => r(seen));
      if (rule) rules = rules.filter((r) => r !== rule);
      const body = Buffer.concat(chunks);
      const upstreamReq = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: forwardHeaders(req.headers, target, body.length),
          agent: false,
        },
        (upstreamRes) => {
          if (rule) {
            // Read the answer to its end, so the upstream finished its work, then drop it.
            upstreamRes.resume();
            upstreamRes.on('end', () => {
              lost += 1;
              req.socket.destroy();
            });
            return;
          }
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
          upstreamRes.pipe(res);
        },
      );
      upstreamReq.on('error', () => req.socket.destroy());
      upstreamReq.end(body);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    setUpstream(next) {
      target = new URL(next);
    },
    loseNextResponse(matches) {
      rules.push(matches);
    },
    loseNextResponseFor(operationId) {
      rules.push((r) => r.method === 'POST' && r.idempotencyKey === operationId);
    },
    get lost() {
      return lost;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function forwardHeaders(headers: IncomingHttpHeaders, target: URL, length: number): IncomingHttpHeaders {
  const forwarded: IncomingHttpHeaders = { ...headers, host: target.host, connection: 'close' };
  delete forwarded['transfer-encoding'];
  forwarded['content-length'] = String(length);
  return forwarded;
}

function unquote(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed.startsWith('"') && trimmed.endsWith('"')
    ? trimmed.slice(1, -1).replace(/\\(["\\])/g, '$1')
    : trimmed;
}
