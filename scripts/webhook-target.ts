import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on 127.0.0.1 that counts what reaches it, so that the end-to-end tests, the
 * client tests and the demo observe exactly how many times an action happened. Its path chooses its
 * behaviour:
 *
 * | path | answer |
 * | --- | --- |
 * | `/ok/<name>` (or anything else) | 200 at once |
 * | `/status/<code>/<name>` | that status with a small JSON body (applied, as a real server may) |
 * | `/delay/<ms>/<name>`, `/slow/<ms>/<name>` | applied on arrival, 200 after `ms` |
 * | `/hold/<name>` | nothing until {@link WebhookTarget.release} (or the client goes away) |
 * | `/hang-once/<name>` | the first request is applied and never answered (until close); later ones at once |
 * | `/fail-once/<status>/<name>` | the first request is answered `status` without applying anything; later ones 200 |
 *
 * With `dedupeByKey`, it behaves like a server with idempotency-key support (Stripe, the IETF
 * draft): a request whose `Idempotency-Key` it has already applied is answered 200 again and applies
 * nothing. That is what makes an origin safe to list in `TOOL_LEDGER_WEBHOOK_IDEMPOTENT`. Without
 * it, every request that gets past its fault is an effect.
 */

/** One request as the target saw it. */
export interface TargetHit {
  path: string;
  /** The `Idempotency-Key` header as sent (an sf-string: `"…"`), if any. */
  idempotencyKey: string | undefined;
  /** The W3C `traceparent` header, if the sender passed its trace context on. */
  traceparent: string | undefined;
  /** The request body, as text. */
  body: string;
  /** Whether this request applied an effect. */
  applied: boolean;
}

/** Options of {@link startWebhookTarget}. */
export interface WebhookTargetOptions {
  /** Apply each `Idempotency-Key` at most once. @default false */
  dedupeByKey?: boolean;
}

/** A running target. */
export interface WebhookTarget {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Every request so far, in arrival order. */
  readonly hits: readonly TargetHit[];
  /** Requests to `path`. */
  count(path: string): number;
  /** Effects applied (for `path` only, when given). */
  effects(path?: string): number;
  /** Distinct `Idempotency-Key` values seen (for `path` only, when given). */
  distinctKeys(path?: string): number;
  /** Resolves at the `n`-th request to `path` (at once if it already came). */
  waitForHit(path: string, n?: number): Promise<void>;
  /** Answers every held request to `/hold/<name>` (and later ones) with 200. */
  release(name: string): void;
  /** Drops the counts (the fault schedule starts over too). */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts a target on a free loopback port.
 *
 * @example
 * ```ts
 * const target = await startWebhookTarget({ dedupeByKey: true });
 * // TOOL_LEDGER_WEBHOOK_IDEMPOTENT=target.origin
 * target.effects('/hang-once/deploy'); // 1, however many retries carried the same key
 * ```
 */
export async function startWebhookTarget(options: WebhookTargetOptions = {}): Promise<WebhookTarget> {
  let hits: TargetHit[] = [];
  let appliedKeys = new Set<string>();
  let faulted = new Set<string>();
  let waiters: { path: string; n: number; resolve: () => void }[] = [];
  const held = new Map<string, ServerResponse[]>();
  const released = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  const count = (path: string) => hits.filter((h) => h.path === path).length;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const header = req.headers['idempotency-key'];
      const key = typeof header === 'string' ? header : undefined;
      const [, kind, arg] = path.split('/');
      // A fault strikes the first request to a path, whatever it carries.
      const firstTime = !faulted.has(path);
      faulted.add(path);
      const failing = kind === 'fail-once' && firstTime;
      const replay = options.dedupeByKey === true && key !== undefined && appliedKeys.has(key);
      const applied = !failing && !replay;
      if (applied && key !== undefined) appliedKeys.add(key);
      const traceparent = typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined;
      hits.push({
        path,
        idempotencyKey: key,
        traceparent,
        body: Buffer.concat(chunks).toString('utf8'),
        applied,
      });
      for (const waiter of waiters.filter((w) => w.path === path && count(path) >= w.n)) {
        waiters = waiters.filter((w) => w !== waiter);
        waiter.resolve();
      }
      if (failing) return json(res, Number(arg), { error: 'scripted failure' });
      if (replay) return json(res, 200, { ok: true, replayed: true });
      if (kind === 'status') return json(res, Number(arg), { status: Number(arg) });
      if (kind === 'hang-once' && firstTime) return; // applied, never answered
      if (kind === 'hold' && !released.has(arg ?? '')) {
        held.set(arg ?? '', [...(held.get(arg ?? '') ?? []), res]);
        return;
      }
      if (kind === 'delay' || kind === 'slow') {
        const timer = setTimeout(() => {
          timers.delete(timer);
          json(res, 200, { ok: true, delayed: true });
        }, Number(arg));
        timers.add(timer);
        return;
      }
      json(res, 200, { ok: true });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const matching = (path?: string) => hits.filter((h) => path === undefined || h.path === path);
  return {
    origin,
    get hits() {
      return hits;
    },
    count,
    effects: (path) => matching(path).filter((h) => h.applied).length,
    distinctKeys: (path) =>
      new Set(matching(path).flatMap((h) => (h.idempotencyKey === undefined ? [] : [h.idempotencyKey]))).size,
    waitForHit(path, n = 1) {
      if (count(path) >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ path, n, resolve }));
    },
    release(name) {
      released.add(name);
      for (const res of held.get(name) ?? []) json(res, 200, { ok: true, held: true });
      held.delete(name);
    },
    reset() {
      hits = [];
      appliedKeys = new Set();
      faulted = new Set();
      waiters = [];
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
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
