import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The target of the caller-executed scene: a payments API on 127.0.0.1 as many real ones are. It
 * applies every charge it is sent (no idempotency keys: a second request is a second charge) and lets
 * its client look charges up by a reference the client attached, which is what a caller's `reconcile`
 * asks. It counts what it applied, so the scene reads the effects where they land.
 *
 * | request | answer |
 * | --- | --- |
 * | `POST /charges` `{"customer", "cents", "reference"?}` | the charge applied, then 200 `{"id", …}` (held when armed) |
 * | `GET /charges?reference=<r>` | 200 `{"data": [charges with that reference]}` |
 */

/** One applied charge. */
export interface Charge {
  id: string;
  customer: string;
  cents: number;
  /** What the client attached to find the charge again (the ledger run sends its downstream key). */
  reference: string | undefined;
}

/** A running target. */
export interface ChargeTarget {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Every charge applied so far, in order. */
  readonly charges: readonly Charge[];
  /** Resolves once `n` charges have been applied (at once if they already were). */
  waitForCharges(n: number): Promise<void>;
  /**
   * The next charge is applied on arrival and its answer never sent: its client is left inside the
   * call, after the effect and before it knows, until it goes away.
   */
  holdNextAnswer(): void;
  close(): Promise<void>;
}

/**
 * Starts a target on a free loopback port.
 *
 * @example
 * ```ts
 * const target = await startChargeTarget();
 * target.holdNextAnswer();
 * // an agent posts a charge; it is applied, the agent waits for an answer that never comes
 * await target.waitForCharges(1);
 * ```
 */
export async function startChargeTarget(): Promise<ChargeTarget> {
  const charges: Charge[] = [];
  let waiters: { n: number; resolve: () => void }[] = [];
  let holdNext = false;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== '/charges') return json(res, 404, { error: 'not_found' });
      if (req.method === 'GET') {
        const reference = url.searchParams.get('reference');
        return json(res, 200, { data: charges.filter((c) => c.reference === reference) });
      }
      if (req.method !== 'POST') return json(res, 405, { error: 'method_not_allowed' });
      let body: { customer?: unknown; cents?: unknown; reference?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return json(res, 400, { error: 'invalid_json' });
      }
      if (typeof body.customer !== 'string' || !Number.isSafeInteger(body.cents)) {
        return json(res, 400, { error: 'customer and cents are required' });
      }
      const charge: Charge = {
        id: `ch_${charges.length + 1}`,
        customer: body.customer,
        cents: body.cents as number,
        reference: typeof body.reference === 'string' ? body.reference : undefined,
      };
      charges.push(charge);
      for (const waiter of waiters.filter((w) => charges.length >= w.n)) waiter.resolve();
      waiters = waiters.filter((w) => charges.length < w.n);
      if (holdNext) {
        holdNext = false;
        return; // applied; the answer is never sent
      }
      json(res, 200, charge);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    charges,
    waitForCharges(n) {
      if (charges.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    holdNextAnswer() {
      holdNext = true;
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
