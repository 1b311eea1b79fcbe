import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorApi } from '../operator-api';
import { forward } from './forward';
import { checkRequest, newSecret } from './guard';
import { type ConsoleProblem, problemFromError, problemOf } from './problems';

/** The page's files, served from memory: the whole console, no asset from anywhere else. */
const STATIC_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
  '/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/api.js': { file: 'api.js', type: 'text/javascript; charset=utf-8' },
  '/views.js': { file: 'views.js', type: 'text/javascript; charset=utf-8' },
  '/queue.js': { file: 'queue.js', type: 'text/javascript; charset=utf-8' },
  '/search.js': { file: 'search.js', type: 'text/javascript; charset=utf-8' },
  '/dom.js': { file: 'dom.js', type: 'text/javascript; charset=utf-8' },
};

/** Largest JSON body the page sends (a resolution's result is stored at most 32 KiB anyway). */
const MAX_BODY_BYTES = 256 * 1024;

/**
 * Headers on every answer. The page runs only its own scripts and talks only to its own origin, may
 * not be framed (an operator's buttons under another page's clicks), and nothing is cached or sent
 * on as a referrer.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

/** Options of {@link startConsoleServer}. */
export interface ConsoleServerOptions {
  /** The API, with the CLI's credentials. */
  api: OperatorApi;
  /** Port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** The per-run secret. @default a fresh {@link newSecret} */
  secret?: string;
}

/** A running console. */
export interface ConsoleServer {
  /** `http://127.0.0.1:<port>/#secret=<secret>`: the one URL that opens the console. */
  url: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Starts the operators' console on 127.0.0.1: the page's static files and a forwarder of the API calls
 * it makes, signed with the CLI's credentials, so the browser never holds a token or AWS credentials.
 * Every request passes {@link checkRequest} first (own Host and Origin; the secret for API calls).
 *
 * ```
 * browser ──GET / , /console.js──▶ console (Host/Origin checked) ──▶ static files
 *         ──/api/v1/… + secret──▶ console (Host/Origin/secret) ──OperatorApi (token | SigV4)──▶ API
 * ```
 *
 * @example
 * ```ts
 * const server = await startConsoleServer({ api: await HttpOperatorApi.connect(connection), port: 0 });
 * console.log(server.url); // http://127.0.0.1:40123/#secret=…
 * ```
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const secret = options.secret ?? newSecret();
  const files = await loadStaticFiles();
  let port = options.port;
  const server: Server = createServer((req, res) => {
    handle(req, res, { api: options.api, secret, port, files }).catch(() => {
      sendProblem(res, problemOf('internal_error'));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/#secret=${secret}`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface HandlerState {
  api: OperatorApi;
  secret: string;
  port: number;
  files: ReadonlyMap<string, Buffer>;
}

async function handle(req: IncomingMessage, res: ServerResponse, state: HandlerState): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://console.invalid');
  const api = url.pathname === '/api' || url.pathname.startsWith('/api/');
  const refusal = checkRequest(req.headers, { port: state.port, secret: state.secret, api });
  if (refusal) {
    req.resume();
    return sendProblem(res, problemOf(refusal.code, refusal.detail));
  }
  if (!api) {
    req.resume();
    const entry = STATIC_FILES[url.pathname];
    const content = entry && state.files.get(entry.file);
    if (!entry || !content) return sendProblem(res, problemOf('not_found'));
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return sendProblem(res, problemOf('method_not_allowed'));
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': entry.type, 'content-length': content.length });
    res.end(req.method === 'HEAD' ? undefined : content);
    return;
  }
  let body: unknown;
  if (req.method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      req.resume();
      return sendProblem(res, problemOf('unsupported_media_type', 'send application/json'));
    }
    const text = await readBody(req);
    if (text === undefined) return sendProblem(res, problemOf('payload_too_large'));
    try {
      body = JSON.parse(text);
    } catch {
      return sendProblem(
        res,
        problemOf('validation_failed', 'the body is not JSON', {
          issues: [{ path: 'body', message: 'invalid' }],
        }),
      );
    }
  } else {
    req.resume();
  }
  let answer: Awaited<ReturnType<typeof forward>>;
  try {
    answer = await forward(state.api, {
      method: req.method ?? 'GET',
      path: url.pathname.slice('/api'.length),
      query: url.searchParams,
      body,
    });
  } catch (error) {
    return sendProblem(res, problemFromError(error));
  }
  if ('problem' in answer) return sendProblem(res, answer.problem);
  sendJson(res, answer.status, answer.body, 'application/json');
}

function sendProblem(res: ServerResponse, problem: ConsoleProblem): void {
  sendJson(res, problem.status, problem.body, 'application/problem+json');
}

function sendJson(res: ServerResponse, status: number, body: unknown, type: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': `${type}; charset=utf-8`,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * The body as text, or `undefined` once it passes {@link MAX_BODY_BYTES}. The rest is read and dropped
 * rather than the stream destroyed, so the refusal can still be answered.
 */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8');
}

async function loadStaticFiles(): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const { file } of Object.values(STATIC_FILES)) {
    files.set(file, await readFile(new URL(`./static/${file}`, import.meta.url)));
  }
  return files;
}
