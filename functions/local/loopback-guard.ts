import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { RequestOriginError } from '../domain/errors';

/**
 * Local mode answers only the machine's own clients (the contract, §10). Its servers listen on
 * 127.0.0.1, but a web page the developer visits can still reach them: it rebinds its own domain to
 * 127.0.0.1 (DNS rebinding) and then calls `http://attacker.example:3000/v1/operations` as a same-origin
 * request, with no CORS preflight, and with the bearer token it guessed. The browser sends the page's
 * names, not the machine's: `Host: attacker.example:3000`, and `Origin: http://attacker.example:3000` on
 * a POST. So every request must name this machine's loopback in `Host` (`127.0.0.1`, `localhost`, `[::1]`,
 * with the server's own port) and, when it has an `Origin`, come from such an origin. Command-line tools,
 * SDKs and agents send exactly that; only a browser on another name does not.
 *
 * ```
 *  Host: 127.0.0.1:3000 | localhost:3000 | [::1]:3000       ─▶ served
 *  Host: attacker.example:3000                              ─▶ 403 host_not_allowed
 *  Origin: http://attacker.example:3000 (or null, https:…)  ─▶ 403 origin_not_allowed
 * ```
 */

/** The loopback names a request may use for this machine. */
export const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'] as const;

/**
 * The `Host` values that name this machine's server on `port`: each loopback name with the port (and
 * without it, on port 80, where clients leave the default out).
 *
 * @example
 * ```ts
 * loopbackHosts(3000); // Set { '127.0.0.1:3000', 'localhost:3000', '[::1]:3000' }
 * ```
 */
export function loopbackHosts(port: number): ReadonlySet<string> {
  const hosts = new Set<string>();
  for (const name of LOOPBACK_NAMES) {
    hosts.add(`${name}:${port}`);
    if (port === 80) hosts.add(name);
  }
  return hosts;
}

/**
 * Why a request to a local server on `port` is refused, or undefined when it names this machine and
 * comes from no other origin. The reason names no header value (they are the attacker's text).
 *
 * @example
 * ```ts
 * const refusal = loopbackRefusal(req.headers, 3000);
 * if (refusal) return problemResponse(refusal, requestId); // 403 host_not_allowed | origin_not_allowed
 * ```
 */
export function loopbackRefusal(headers: IncomingHttpHeaders, port: number): RequestOriginError | undefined {
  const hosts = loopbackHosts(port);
  const host = headers.host;
  if (typeof host !== 'string' || !hosts.has(host.toLowerCase())) {
    return new RequestOriginError(
      'host_not_allowed',
      `local mode answers only requests for this machine: the Host header must be 127.0.0.1, localhost or [::1] with port ${port}`,
    );
  }
  const origin = headers.origin;
  if (origin !== undefined) {
    const own = [...hosts].some((h) => origin.toLowerCase() === `http://${h}`);
    if (!own) {
      return new RequestOriginError(
        'origin_not_allowed',
        'local mode answers no web page of another origin: the Origin header must be this machine’s own',
      );
    }
  }
  return undefined;
}

/**
 * Puts the guard in front of a Node HTTP server's request handlers (local mode's DynamoDB and SQS, whose
 * own code knows nothing of it): a refused request is drained and answered by `refuse`, in the
 * server's own error shape. `port` is read at each request (a server on port 0 learns it at listen).
 * Requests without a socket (local mode's handlers reach their DynamoDB over a MessagePort) are not
 * HTTP requests, and pass.
 *
 * @example
 * ```ts
 * guardServer(app.server, () => listening, (res, refusal) => sendAwsError(res, 403, refusal));
 * ```
 */
export function guardServer(
  server: Server,
  port: () => number,
  refuse: (res: ServerResponse, refusal: RequestOriginError) => void,
): void {
  const handlers = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const refusal = req.socket === undefined ? undefined : loopbackRefusal(req.headers, port());
    if (refusal === undefined) {
      for (const handler of handlers) handler.call(server, req, res);
      return;
    }
    req.resume();
    refuse(res, refusal);
  });
}

/**
 * Answers a refused request to a local AWS emulator as AWS would refuse it: 403, a JSON error of the
 * given `__type`, and a message with the stable code.
 */
export function sendAwsRefusal(res: ServerResponse, type: string, refusal: RequestOriginError): void {
  const body = JSON.stringify({ __type: type, message: `${refusal.code}: ${refusal.message}` });
  res.writeHead(403, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
