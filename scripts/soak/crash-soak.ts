import { SETTINGS } from '../../functions/contract/environment';
import { isTerminal, type OperationState } from '../../functions/domain/states';
import { seededRandom } from '../load/workload';
import { type LocalStackProcess, startLocalStack } from '../local-stack';
import type { WebhookTarget } from '../webhook-target';
import { auditIndexes, type IndexAudit } from './ledger-audit';

/**
 * `kill -9` of local mode at random instants under concurrent load, restart after restart on one data
 * folder, then every operation driven to where it ends (terminal, or in front of an operator) and
 * every record checked against the indexes and every effect counted. The instant of each kill is an
 * event, not a time: the stack dies when a random number of responses has come back, with the other
 * clients' requests in flight.
 *
 * Effects are webhook calls to a counting receiver, one path per operation and not deduplicated, so
 * each request that reached it is one effect: two for one operation is a duplicate.
 */

/** Settings of a soak. */
export interface CrashSoakOptions {
  /** The data folder (a fresh temp folder). */
  dataDir: string;
  /** The counting receiver. */
  target: WebhookTarget;
  /** kill -9 / restart cycles. */
  cycles: number;
  /** Clients sending at once. @default 8 */
  concurrency?: number;
  /** Seed of the random choices (kill instants, retries, async calls). @default Date.now() */
  seed?: number;
  /** Longest wait for every operation to settle at the end, ms. @default 120000 */
  settleTimeoutMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What a soak found. The five problem counts must all be 0. */
export interface CrashSoakReport {
  seed: number;
  cycles: number;
  /** Operation IDs sent. */
  operations: number;
  /** Records in the ledger at the end. */
  records: number;
  /** Requests that reached the receiver. */
  effects: number;
  /** Effects beyond the first, summed over operations. */
  duplicateEffects: number;
  /** Effects of operations that have no record (an effect the ledger lost). */
  effectsWithoutRecord: number;
  /** `succeeded` records whose effect never reached the receiver. */
  succeededWithoutEffect: number;
  /** Non-terminal records missing from an index. */
  outsideIndexes: number;
  /** Index entries that show what their record no longer is. */
  staleEntries: number;
  /** Operations neither terminal nor in front of an operator when the wait ended. */
  notSettled: number;
  /** What the start-up repairs found over all restarts (the damage each kill left). */
  repaired: { missing: number; stale: number; orphaned: number; requeued: number };
  /** Start-up check durations, ms, with the record count each saw. */
  repairs: { records: number; ms: number }[];
  /** Final states, counted. */
  states: Record<string, number>;
}

const STACK_ENV = {
  [SETTINGS.leaseGraceMs.name]: '200',
  [SETTINGS.reconcileEveryMs.name]: '200',
  [SETTINGS.retryBaseMs.name]: '100',
  [SETTINGS.queuedStaleMs.name]: '2000',
  [SETTINGS.logFormat.name]: 'json',
};

/** States in which nothing moves without a person: terminal ones and `needs_reconciliation`. */
function settled(state: OperationState): boolean {
  return isTerminal(state) || state === 'needs_reconciliation';
}

/**
 * Runs the soak and reports.
 *
 * @example
 * ```ts
 * const report = await runCrashSoak({ dataDir, target, cycles: 3 });
 * expect(report.duplicateEffects).toBe(0);
 * ```
 */
export async function runCrashSoak(options: CrashSoakOptions): Promise<CrashSoakReport> {
  const seed = options.seed ?? Date.now();
  const random = seededRandom(seed);
  const log = options.log ?? (() => undefined);
  const concurrency = options.concurrency ?? 8;
  const bodies = new Map<string, string>();
  const report: CrashSoakReport = {
    seed,
    cycles: options.cycles,
    operations: 0,
    records: 0,
    effects: 0,
    duplicateEffects: 0,
    effectsWithoutRecord: 0,
    succeededWithoutEffect: 0,
    outsideIndexes: 0,
    staleEntries: 0,
    notSettled: 0,
    repaired: { missing: 0, stale: 0, orphaned: 0, requeued: 0 },
    repairs: [],
    states: {},
  };
  const start = async () => {
    const stack = await startLocalStack({ dataDir: options.dataDir, env: STACK_ENV });
    const line = stack.stdoutLines().find((l) => l.includes('"ledger indexes checked"'));
    if (line) {
      const found = JSON.parse(line) as Record<string, number>;
      for (const k of ['missing', 'stale', 'orphaned', 'requeued'] as const)
        report.repaired[k] += found[k] ?? 0;
      report.repairs.push({ records: found.records ?? 0, ms: found.duration_ms ?? 0 });
    }
    return stack;
  };

  for (let cycle = 1; cycle <= options.cycles; cycle += 1) {
    const stack = await start();
    const killAfter = 5 + Math.floor(random() * 6 * concurrency);
    let answered = 0;
    let dead = false;
    let killed: Promise<void> | undefined;
    const client = async () => {
      while (!dead) {
        const id =
          bodies.size > 0 && random() < 0.3
            ? ([...bodies.keys()][Math.floor(random() * bodies.size)] as string)
            : newOperation(bodies, options.target, random);
        const async = random() < 0.3;
        try {
          await post(stack, id, bodies.get(id) as string, async);
        } catch {
          // The stack died under this request: what the ledger made of it is checked at the end.
          return;
        }
        answered += 1;
        if (answered === killAfter) {
          dead = true;
          killed = stack.kill();
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, client));
    await killed;
    log(`cycle ${cycle}/${options.cycles}: kill -9 after ${killAfter} answers (${bodies.size} operations)`);
  }

  const stack = await start();
  try {
    report.operations = bodies.size;
    const states = await settle(stack, [...bodies.keys()], options.settleTimeoutMs ?? 120_000);
    // Retries of every recorded operation after all the crashes: replays and reports, never effects.
    for (const [id, state] of states) {
      if (state !== undefined) await post(stack, id, bodies.get(id) as string, false);
    }
    const audit: IndexAudit = await auditIndexes(stack.dynamodb, stack.table);
    report.records = audit.records;
    report.outsideIndexes = audit.outsideIndexes.length;
    report.staleEntries = audit.staleEntries.length;
    for (const [id, state] of states) {
      const hits = options.target.count(pathOf(id));
      report.effects += hits;
      report.duplicateEffects += Math.max(0, hits - 1);
      if (state === undefined && hits > 0) report.effectsWithoutRecord += hits;
      if (state === 'succeeded' && hits === 0) report.succeededWithoutEffect += 1;
      if (state !== undefined && !settled(state)) report.notSettled += 1;
      const name = state ?? 'never recorded';
      report.states[name] = (report.states[name] ?? 0) + 1;
    }
  } finally {
    await stack.stop();
  }
  return report;
}

/** A new operation: a webhook call to its own path of the receiver. */
function newOperation(bodies: Map<string, string>, target: WebhookTarget, random: () => number): string {
  const id = `soak-${bodies.size + 1}-${Math.floor(random() * 1e9).toString(36)}`;
  bodies.set(
    id,
    JSON.stringify({
      tool: 'webhook.post',
      arguments: { url: `${target.origin}${pathOf(id)}`, json: { id } },
    }),
  );
  return id;
}

function pathOf(id: string): string {
  return `/ok/${id}`;
}

async function post(
  stack: Pick<LocalStackProcess, 'api' | 'tokens'>,
  id: string,
  body: string,
  async: boolean,
): Promise<number> {
  const response = await fetch(`${stack.api}/v1/operations`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.tokens.agent}`,
      'content-type': 'application/json',
      'idempotency-key': id,
      ...(async ? { prefer: 'respond-async' } : {}),
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Reads every operation until each is settled or the wait ends; returns the last state seen
 * (undefined: the ledger has no record, the request died before the reservation).
 */
async function settle(
  stack: LocalStackProcess,
  ids: string[],
  timeoutMs: number,
): Promise<Map<string, OperationState | undefined>> {
  const states = new Map<string, OperationState | undefined>();
  let open = ids;
  const deadline = Date.now() + timeoutMs;
  while (open.length > 0) {
    const next: string[] = [];
    for (const id of open) {
      const response = await fetch(`${stack.api}/v1/operations/${encodeURIComponent(id)}`, {
        headers: { authorization: `Bearer ${stack.tokens.agent}` },
      });
      const body = (await response.json()) as { state?: OperationState };
      if (response.status === 404) {
        states.set(id, undefined);
        continue;
      }
      states.set(id, body.state);
      if (response.status !== 200 || body.state === undefined || !settled(body.state)) next.push(id);
    }
    open = next;
    if (open.length === 0 || Date.now() > deadline) break;
    // Each round is a round of HTTP answers; the pause only keeps the polling from taking a core.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return states;
}
