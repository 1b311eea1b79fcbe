import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the server received it. */
export interface RecordedRequest {
  method: string;
  /** Path and query exactly as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  /** Body bytes as text. */
  body: string;
}

/** What the script does with a request. */
export type Reply =
  | { status: number; headers?: Record<string, string>; json?: unknown; text?: string }
  /** Read the request, then close the socket without answering: a lost response. */
  | { drop: true }
  /** Never answer: a request that times out. */
  | { hang: true };

/** A scripted HTTP server on 127.0.0.1 and what it received. */
export interface ScriptedServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * Starts a real HTTP server whose answers come from `script`, called with each request and its index
 * (from 0). Used to play the tool-ledger API's documented answers and faults at the client.
 */
export async function startScriptedServer(
  script: (request: RecordedRequest, index: number) => Reply | Promise<Reply>,
): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const index = requests.push(recorded) - 1;
      const reply = await script(recorded, index);
      if ('drop' in reply) {
        req.socket.destroy();
        return;
      }
      if ('hang' in reply) return;
      const headers: Record<string, string> = { ...reply.headers };
      let body = reply.text ?? '';
      if (reply.json !== undefined) {
        body = JSON.stringify(reply.json);
        headers['content-type'] ??= 'application/json';
      }
      res.writeHead(reply.status, headers);
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A clock whose `sleep` returns at once and moves time forward, recording each delay. */
export function fakeClock(start = Date.UTC(2025, 0, 2, 3, 4, 5)) {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
    sleep: async (ms: number, signal?: AbortSignal) => {
      if (signal?.aborted) throw signal.reason;
      sleeps.push(ms);
      now += ms;
    },
  };
}

/** An operation body as the API returns it. */
export function operationBody(
  operationId: string,
  state: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const terminal = state === 'succeeded' || state === 'failed_terminal' || state === 'rejected';
  return {
    operation_id: operationId,
    tool: 'webhook.post',
    state,
    arguments_digest: 'v1:aaaa',
    attempt: 1,
    replayed: false,
    result: null,
    error: null,
    created_at: '2025-01-02T03:04:05.000Z',
    completed_at: terminal ? '2025-01-02T03:04:06.000Z' : null,
    ...extra,
  };
}

/** A problem+json answer. */
export function problem(
  status: number,
  code: string,
  extra: Record<string, unknown> = {},
  headers = {},
): Reply {
  return {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    json: { type: 'about:blank', title: code.replace(/_/g, ' '), status, code, ...extra },
  };
}
