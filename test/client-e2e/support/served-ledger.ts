import type { AnyTool } from '../../../functions/domain/tool';
import { createApiHandler } from '../../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../../functions/http/auth-tokens';
import { HttpAdapter } from '../../../functions/local/http-adapter';
import { TOKENS } from '../../http/support';
import type { DynaliteHandle } from '../../support/dynalite';
import { freshTable } from '../../support/dynalite';
import { type TestLedger, testLedger } from '../../support/harness';

/**
 * The real API for the client's end-to-end tests: the API handler on a dynalite-backed ledger, served
 * over HTTP by local mode's API Gateway adapter on a free loopback port. The ledger's clock is the
 * test's (`ledger.advance`), so a lease expires when the test says, and the reconciler runs when the
 * test asks (`reconcile`), never on a timer. Tokens are those of the HTTP tests (`agent-a`,
 * `approver-a`, `operator-a` for tenant acme; `agent-b` for another tenant).
 */
export interface ServedLedger {
  ledger: TestLedger;
  endpoint: string;
  /** One reconciler pass over every shard, at the ledger's current time. */
  reconcile(): Promise<void>;
  close(): Promise<void>;
}

/** Serves a fresh ledger (its own table) with these ledger-executed tools. */
export async function serveLedger(db: DynaliteHandle, tools: AnyTool[] = []): Promise<ServedLedger> {
  const ledger = testLedger(db.client, await freshTable(db.client), tools, { approvalTtlSeconds: 3600 });
  const handler = createApiHandler({ deps: ledger.deps }, new BearerTokenAuthenticator(TOKENS));
  const adapter = new HttpAdapter(handler, { name: 'client-e2e-api', timeoutMs: 30_000 });
  const endpoint = `http://127.0.0.1:${await adapter.listen(0)}`;
  return {
    ledger,
    endpoint,
    async reconcile() {
      const { reconcilePass } = await import('../../../functions/engine/reconcile');
      await reconcilePass(ledger.deps, ledger.req());
    },
    async close() {
      await adapter.close(1_000);
    },
  };
}

/** The caller protocol's routes, as the fault injector tells requests apart. */
export type Route = 'claim' | 'lease' | 'outcome' | 'reconciliation' | 'get' | 'other';

/** What happens to the next request on a route. */
export type Fault =
  /** The request reaches the ledger; its answer is lost on the way back (a reset). */
  | 'lose_answer'
  /** The request reaches the ledger twice (a duplicated delivery); the client reads the second answer. */
  | 'duplicate'
  /** The process dies before sending: nothing reaches the ledger, and `run` stops there. */
  | 'crash';

/**
 * A `fetch` that sends to the real ledger and injects faults on the routes a test names, and reports
 * each answered request as an event a test can wait for.
 */
export class FaultyFetch {
  /** Every request that reached the ledger, in order, with its JSON body. */
  readonly delivered: { route: Route; body: Record<string, unknown> | undefined }[] = [];
  private readonly faults: { route: Route; fault: Fault; always: boolean }[] = [];
  private readonly watchers: { route: Route; count: number; resolve: () => void }[] = [];

  /** The next request on `route` meets `fault`; with `always`, every one does. */
  inject(route: Route, fault: Fault, options: { always?: boolean } = {}): this {
    this.faults.push({ route, fault, always: options.always === true });
    return this;
  }

  /** Resolves once `count` requests on `route` have been answered by the ledger (in all). */
  answered(route: Route, count = 1): Promise<void> {
    return new Promise((resolve) => {
      this.watchers.push({ route, count, resolve });
      this.notify();
    });
  }

  /** The bodies delivered on a route. */
  bodies(route: Route): Record<string, unknown>[] {
    return this.delivered.filter((d) => d.route === route).map((d) => d.body ?? {});
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const route = routeOf(init?.method ?? 'GET', url.pathname);
    const index = this.faults.findIndex((f) => f.route === route);
    const found = index >= 0 ? this.faults[index] : undefined;
    if (found && !found.always) this.faults.splice(index, 1);
    if (found?.fault === 'crash') throw new Error('the caller crashed before sending');
    const body =
      typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    if (found?.fault === 'duplicate') {
      const first = await fetch(input, init);
      await first.text();
      this.delivered.push({ route, body });
    }
    const response = await fetch(input, init);
    this.delivered.push({ route, body });
    if (found?.fault === 'lose_answer') {
      await response.text();
      this.notify();
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      });
    }
    this.notify();
    return response;
  };

  private notify(): void {
    for (const watcher of [...this.watchers]) {
      if (this.delivered.filter((d) => d.route === watcher.route).length >= watcher.count) {
        this.watchers.splice(this.watchers.indexOf(watcher), 1);
        watcher.resolve();
      }
    }
  }
}

function routeOf(method: string, path: string): Route {
  if (method === 'GET') return 'get';
  if (path === '/v1/operations') return 'claim';
  if (path.endsWith('/lease')) return 'lease';
  if (path.endsWith('/outcome')) return 'outcome';
  if (path.endsWith('/reconciliation')) return 'reconciliation';
  return 'other';
}
