import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The end-to-end tests' own webhook target on 127.0.0.1: it counts every request per path, and its
 * paths choose its behaviour, so that a test can observe exactly how many effects happened.
 *
 * | path | answer |
 * | --- | --- |
 * | `/ok/<name>` | 200 `{"ok": true}` |
 * | `/status/<code>/<name>` | that status with a small JSON body |
 * | `/delay/<ms>/<name>` | 200 after `ms` milliseconds |
 * | `/hold/<name>` | nothing until {@link WebhookTarget.release} (or the client goes away) |
 */

/** One request as the target saw it. */
export interface Hit {
  path: string;
  idempotencyKey: string | undefined;
  body: string;
}

/** A running target. */
export interface WebhookTarget {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Every request so far, in arrival order. */
  hits: Hit[];
  /** Requests to `path` so far. */
  count(path: string): number;
  /** Resolves at the `n`-th request to `path` (at once if it already happened). */
  waitForHit(path: string, n?: number): Promise<void>;
  /** Answers every held request to `/hold/<name>` (and later ones) with 200. */
  release(name: string): void;
  close(): Promise<void>;
}

/** Starts a target on a free loopback port. */
export async function startWebhookTarget(): Promise<WebhookTarget> {
  const hits: Hit[] = [];
  const waiters: { path: string; n: number; resolve: () => void }[] = [];
  const held = new Map<string, ServerResponse[]>();
  const released = new Set<string>();
  const count = (path: string) => hits.filter((h) => h.path === path).length;

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const key = req.headers['idempotency-key'];
      hits.push({
        path,
        idempotencyKey: typeof key === 'string' ? key : undefined,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      for (const waiter of waiters.filter((w) => w.path === path && count(path) >= w.n)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      answer(path, res);
    });
  });

  function answer(path: string, res: ServerResponse): void {
    const [, kind, arg] = path.split('/');
    if (kind === 'status') {
      json(res, Number(arg), { status: Number(arg) });
    } else if (kind === 'delay') {
      setTimeout(() => json(res, 200, { ok: true, delayed: true }), Number(arg));
    } else if (kind === 'hold' && !released.has(arg ?? '')) {
      const list = held.get(arg ?? '') ?? [];
      list.push(res);
      held.set(arg ?? '', list);
    } else {
      json(res, 200, { ok: true });
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    hits,
    count,
    waitForHit(path, n = 1) {
      if (count(path) >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ path, n, resolve }));
    },
    release(name) {
      released.add(name);
      for (const res of held.get(name) ?? []) json(res, 200, { ok: true, held: true });
      held.delete(name);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
