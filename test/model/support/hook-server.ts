import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HookBehaviour } from './schedule';

/** One request the server applied: which key, which operation and arguments variant it carried. */
export interface AppliedHook {
  key: string;
  /** `tenant#operationId` from the body (the model puts both there). */
  op: string;
  variant: number;
  tenant: string;
}

/**
 * A counting webhook target for `webhook.post`: it records every request by its `Idempotency-Key`
 * and applies (counts) an effect per request according to a per-key plan. When `idempotent`, it
 * dedupes like a well-behaved target: a key it already applied gets the stored answer and no second
 * effect, which is what makes an origin safe to list as downstream-idempotent.
 */
export class HookServer {
  /** Requests seen, by key (every arrival, applied or not). */
  readonly arrivals = new Map<string, number>();
  /** Effects applied. */
  readonly applied: AppliedHook[] = [];
  /** Bodies whose tenant did not match the key's operation (must stay empty). */
  readonly crossTenant: string[] = [];
  private readonly stored = new Map<string, string>();
  private plan: (op: string, arrival: number) => HookBehaviour = () => 'ok';
  /** The tenant of the first request that carried each key. */
  private readonly owners = new Map<string, string>();

  private constructor(
    private readonly server: http.Server,
    readonly origin: string,
    readonly idempotent: boolean,
  ) {}

  /** Starts a server on a free loopback port. */
  static async start(idempotent: boolean): Promise<HookServer> {
    let self: HookServer | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => self?.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    self = new HookServer(server, `http://127.0.0.1:${port}`, idempotent);
    return self;
  }

  /**
   * Forgets everything and takes a new plan for the next schedule: what to do with the n-th request
   * carrying a downstream key, by the operation (`tenant#operationId`) its body names. The key itself
   * is derived from the record's reservation, which the model does not know in advance.
   */
  reset(plan: (op: string, arrival: number) => HookBehaviour): void {
    this.arrivals.clear();
    this.applied.length = 0;
    this.crossTenant.length = 0;
    this.stored.clear();
    this.owners.clear();
    this.plan = plan;
  }

  /** Effects applied for an operation (`tenant#operationId`), by arguments variant. */
  appliedOf(op: string): [number, number] {
    const counts: [number, number] = [0, 0];
    for (const hook of this.applied) if (hook.op === op) counts[hook.variant === 1 ? 1 : 0] += 1;
    return counts;
  }

  /** The distinct downstream keys that carried requests for an operation. */
  keysOf(op: string): Set<string> {
    return new Set(this.applied.filter((hook) => hook.op === op).map((hook) => hook.key));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    const header = req.headers['idempotency-key'];
    const key = typeof header === 'string' ? header.replace(/^"|"$/g, '') : '';
    const arrival = (this.arrivals.get(key) ?? 0) + 1;
    this.arrivals.set(key, arrival);
    let body: { canary?: string; variant?: number; tenant?: string; op?: string } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // counted as an arrival; never applied
    }
    const owner = this.owners.get(key);
    if (owner === undefined) this.owners.set(key, body.tenant ?? '');
    else if (owner !== body.tenant) this.crossTenant.push(key);
    const op = `${body.tenant ?? ''}#${body.op ?? ''}`;
    const replay = this.idempotent ? this.stored.get(key) : undefined;
    if (replay !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(replay);
      return;
    }
    const behaviour = this.plan(op, arrival);
    const answer = JSON.stringify({ ok: true, echo: `${body.canary ?? ''}-res` });
    const apply = () => {
      this.applied.push({ key, op, variant: body.variant ?? 0, tenant: body.tenant ?? '' });
      if (this.idempotent) this.stored.set(key, answer);
    };
    switch (behaviour) {
      case 'ok':
        apply();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer);
        return;
      case 'apply_503':
        apply();
        res.writeHead(503);
        res.end();
        return;
      case 'noapply_503':
        res.writeHead(503);
        res.end();
        return;
      case 'reject_400':
        res.writeHead(400);
        res.end();
        return;
      case 'apply_reset':
        apply();
        req.socket.destroy();
        return;
    }
  }

  /** Stops the server. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}

/** A loopback port where nothing listens (connections are refused: nothing is ever sent). */
export async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
