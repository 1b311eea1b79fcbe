import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TargetCounts } from './webhook-target';
import { type PlannedOperation, runFolder } from './workload';

/**
 * Counts, per operation, the effects observed where they land: webhook requests applied per
 * Idempotency-Key at the targets, and marker lines in the workspace files. Nothing here reads the
 * ledger: it is the independent side of "no effect ran twice".
 */

/** Effects per operation ID, and what could not be attributed. */
export interface ObservedEffects {
  /** Applied effects per operation ID (0 when none). */
  byOperation: Map<string, number>;
  /** Webhook keys whose body named no known operation (there must be none). */
  unattributed: number;
  /** Operation IDs whose requests arrived under more than one Idempotency-Key (there must be none). */
  keysPerOperation: Map<string, number>;
}

/**
 * Reads the effects of a run.
 *
 * @example
 * ```ts
 * const effects = await observeEffects(ops, [plain.counts, dedup.counts], workspaceRoot, runId);
 * effects.byOperation.get('load-r1-7'); // 1
 * ```
 */
export async function observeEffects(
  ops: readonly PlannedOperation[],
  targets: readonly TargetCounts[],
  workspaceRoot: string,
  runId: string,
): Promise<ObservedEffects> {
  const byOperation = new Map<string, number>(ops.map((op) => [op.id, 0]));
  const keysPerOperation = new Map<string, number>();
  let unattributed = 0;
  for (const counts of targets) {
    for (const [key, applied] of counts.applied) {
      const op = counts.operationOf.get(key);
      if (op === undefined || !byOperation.has(op)) {
        unattributed += applied;
        continue;
      }
      byOperation.set(op, (byOperation.get(op) ?? 0) + applied);
    }
    for (const op of counts.operationOf.values())
      keysPerOperation.set(op, (keysPerOperation.get(op) ?? 0) + 1);
  }
  const folder = path.join(workspaceRoot, runFolder(runId));
  const markerOwner = new Map(ops.map((op) => [op.marker, op]));
  const lines: string[] = [];
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (name.endsWith('.log')) lines.push(...(await readFile(path.join(folder, name), 'utf8')).split('\n'));
  }
  for (const line of lines) {
    const op = markerOwner.get(line);
    if (op?.kind === 'append_line') byOperation.set(op.id, (byOperation.get(op.id) ?? 0) + 1);
  }
  for (const op of ops) {
    if (op.kind !== 'write_file') continue;
    const content = await readFile(path.join(folder, 'files', `${op.index}.txt`), 'utf8').catch(
      () => undefined,
    );
    if (content === op.marker) byOperation.set(op.id, 1);
  }
  return { byOperation, unattributed, keysPerOperation };
}
