import type { LoadOptions } from './options';

/**
 * What a load run sends: a fixed set of operations over the shipped tools, each sent several times
 * with the same key and the same body, in an order that puts copies of one operation in flight
 * together (so they race each other), some of them cut off client-side (lost responses).
 */

/** Which effect an operation has, and so how its effect is counted afterwards. */
export type OperationKind = 'webhook_plain' | 'webhook_dedup' | 'append_line' | 'write_file';

/** One operation of the run. */
export interface PlannedOperation {
  index: number;
  /** The operation ID (Idempotency-Key). */
  id: string;
  kind: OperationKind;
  /** Sent with `Prefer: respond-async` (queued, then run by the executor). */
  async: boolean;
  tool: string;
  arguments: Record<string, unknown>;
  /** The exact request body, identical on every send. */
  body: string;
  /** Text that marks this operation's effect in a workspace file (append_line, write_file). */
  marker: string;
}

/** One HTTP send of an operation. */
export interface PlannedSend {
  op: PlannedOperation;
  copy: number;
  /** Abort the request after this many ms, losing its response (faults only; never the last copy). */
  abortAfterMs?: number;
}

/** Where the effects land. */
export interface Targets {
  plainOrigin: string;
  dedupOrigin: string;
}

/** Share of each kind, in order; the rest is `write_file`. */
const MIX: readonly [OperationKind, number][] = [
  ['webhook_plain', 0.35],
  ['webhook_dedup', 0.25],
  ['append_line', 0.25],
];

/** Files the append_line operations share, so that appends to one file run concurrently. */
export const APPEND_FILES = 8;

/** The workspace folder of one run (relative to the workspace root). */
export function runFolder(runId: string): string {
  return `load-${runId}`;
}

/**
 * The operations of a run.
 *
 * @example
 * ```ts
 * const ops = planOperations(options, 'r1', targets, random);
 * ops[0]; // { id: 'load-r1-0', kind: 'webhook_plain', async: false, body: '{"tool":"webhook.post",...}' }
 * ```
 */
export function planOperations(
  options: LoadOptions,
  runId: string,
  targets: Targets,
  random: () => number,
): PlannedOperation[] {
  const ops: PlannedOperation[] = [];
  for (let index = 0; index < options.operations; index++) {
    const id = `load-${runId}-${index}`;
    const roll = random();
    let kind: OperationKind = 'write_file';
    let sum = 0;
    for (const [candidate, share] of MIX) {
      sum += share;
      if (roll < sum) {
        kind = candidate;
        break;
      }
    }
    const marker = `marker-${runId}-${index}`;
    let tool: string;
    let args: Record<string, unknown>;
    switch (kind) {
      case 'webhook_plain':
      case 'webhook_dedup':
        tool = 'webhook.post';
        args = {
          url: `${kind === 'webhook_plain' ? targets.plainOrigin : targets.dedupOrigin}/hook`,
          json: { op: id, n: index },
        };
        break;
      case 'append_line':
        tool = 'workspace.append_line';
        args = { path: `${runFolder(runId)}/lines-${index % APPEND_FILES}.log`, line: marker };
        break;
      case 'write_file':
        tool = 'workspace.write_file';
        args = { path: `${runFolder(runId)}/files/${index}.txt`, content: marker };
        break;
    }
    ops.push({
      index,
      id,
      kind,
      async: random() < 0.3,
      tool,
      arguments: args,
      body: JSON.stringify({ tool, arguments: args, agent_run_id: `load-${runId}` }),
      marker,
    });
  }
  return ops;
}

/**
 * Every send of every operation, shuffled within windows about as wide as the client pool, so that
 * the copies of one operation are usually in flight at the same time on different clients. With
 * faults, a fifth of the copies that are not an operation's last are aborted after a few ms.
 */
export function planSends(
  ops: readonly PlannedOperation[],
  options: LoadOptions,
  random: () => number,
): PlannedSend[] {
  const sends: PlannedSend[] = [];
  for (const op of ops) {
    for (let copy = 0; copy < options.sends; copy++) {
      const send: PlannedSend = { op, copy };
      if (options.faults && copy < options.sends - 1 && random() < 0.2) {
        send.abortAfterMs = Math.floor(random() * 40);
      }
      sends.push(send);
    }
  }
  const window = Math.max(2, options.concurrency * 2);
  for (let start = 0; start < sends.length; start += window) {
    const end = Math.min(sends.length, start + window);
    for (let i = end - 1; i > start; i--) {
      const j = start + Math.floor(random() * (i - start + 1));
      [sends[i], sends[j]] = [sends[j] as PlannedSend, sends[i] as PlannedSend];
    }
  }
  return sends;
}

/** A small seeded generator (mulberry32): the same seed gives the same run plan. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
