import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The load run's webhook target on 127.0.0.1, counting every effect by its `Idempotency-Key`: the
 * evidence for "no effect ran twice" comes from the receiving end, not from the ledger's own records.
 *
 * Two kinds, on two origins:
 * - `plain`: applies every request it accepts, like a target with no idempotency support. A key
 *   applied twice is a duplicate effect the ledger caused.
 * - `deduplicating`: applies a key once and answers later requests with the same key from memory,
 *   like Stripe; local mode is told (`TOOL_LEDGER_WEBHOOK_IDEMPOTENT`) so that uncertain calls to it
 *   are retried with the same key. Later requests are counted as redeliveries, not effects.
 *
 * Faults, per request: answer 503 without applying (the outcome looks uncertain to the ledger), or
 * apply and then reset the connection before answering (the effect happened, the response is lost).
 */

/** Fault rates of a target (0..1). */
export interface TargetFaults {
  unavailable: number;
  resetAfterApply: number;
}

/** What a target saw. */
export interface TargetCounts {
  /** Requests received (complete bodies). */
  requests: number;
  /** Applied effects per Idempotency-Key. */
  applied: Map<string, number>;
  /** The operation ID each key was sent for (from the JSON body), to map effects to operations. */
  operationOf: Map<string, string>;
  /** Requests answered 503 without applying. */
  unavailable: number;
  /** Requests applied and then reset. */
  resets: number;
  /** Requests with an already-applied key that a deduplicating target answered from memory. */
  redeliveries: number;
  /** Requests without an Idempotency-Key (there must be none). */
  withoutKey: number;
}

/** A running target. */
export interface WebhookTarget {
  origin: string;
  counts: TargetCounts;
  close(): Promise<void>;
}

/**
 * Starts a target on a free loopback port.
 *
 * @example
 * ```ts
 * const target = await startWebhookTarget('plain', { unavailable: 0.1, resetAfterApply: 0.05 }, Math.random);
 * // POST `${target.origin}/hook` with an Idempotency-Key; read target.counts.applied afterwards.
 * ```
 */
export async function startWebhookTarget(
  kind: 'plain' | 'deduplicating',
  faults: TargetFaults,
  random: () => number,
): Promise<WebhookTarget> {
  const counts: TargetCounts = {
    requests: 0,
    applied: new Map(),
    operationOf: new Map(),
    unavailable: 0,
    resets: 0,
    redeliveries: 0,
    withoutKey: 0,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      counts.requests += 1;
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') {
        counts.withoutKey += 1;
        res.writeHead(400).end();
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { op?: unknown };
        if (typeof body.op === 'string') counts.operationOf.set(key, body.op);
      } catch {
        // Not the load run's body: counted by key only.
      }
      const roll = random();
      if (roll < faults.unavailable) {
        counts.unavailable += 1;
        res.writeHead(503, { 'retry-after': '1' }).end();
        return;
      }
      const seen = counts.applied.get(key) ?? 0;
      if (kind === 'deduplicating' && seen > 0) {
        counts.redeliveries += 1;
      } else {
        counts.applied.set(key, seen + 1);
      }
      if (roll < faults.unavailable + faults.resetAfterApply) {
        counts.resets += 1;
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
