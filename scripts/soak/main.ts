import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllStacks } from '../local-stack';
import { startWebhookTarget } from '../webhook-target';
import { runCrashSoak } from './crash-soak';

/**
 * `npm run soak`: local mode killed with `kill -9` at random instants under concurrent load, CYCLES
 * times (default 50) on one data folder, then every operation driven to its end and checked. Prints
 * the figures; exits 1 unless duplicate effects, operations outside the indexes, stale index entries
 * and operations neither terminal nor in front of an operator are all 0. Options (environment):
 * CYCLES, CONCURRENCY (default 8), SEED, SETTLE_TIMEOUT_S (default 120).
 */

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    process.stderr.write(`soak: ${name} must be a positive integer\n`);
    process.exit(2);
  }
  return value;
}

async function main(): Promise<number> {
  const cycles = positive('CYCLES', 50);
  const concurrency = positive('CONCURRENCY', 8);
  const seed = positive('SEED', Date.now() % 2_147_483_647);
  const settleTimeoutMs = positive('SETTLE_TIMEOUT_S', 120) * 1000;
  const dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-soak-'));
  const target = await startWebhookTarget();
  const started = Date.now();
  try {
    const report = await runCrashSoak({
      dataDir,
      target,
      cycles,
      concurrency,
      seed,
      settleTimeoutMs,
      log: (line) => process.stderr.write(`soak: ${line}\n`),
    });
    const ms = report.repairs.map((r) => r.ms);
    const largest = report.repairs.reduce((a, b) => (b.records > a.records ? b : a), { records: 0, ms: 0 });
    const lines = [
      `seed ${report.seed}, ${report.cycles} kill -9 cycles, concurrency ${concurrency}, ${Math.round((Date.now() - started) / 1000)} s`,
      `operations ${report.operations}, records ${report.records}, effects ${report.effects}`,
      `final states: ${Object.entries(report.states)
        .map(([state, n]) => `${state} ${n}`)
        .join(', ')}`,
      `repaired at start (all restarts): missing ${report.repaired.missing}, stale ${report.repaired.stale}, orphaned ${report.repaired.orphaned}; queued re-sent ${report.repaired.requeued}`,
      `start-up check: max ${Math.max(0, ...ms)} ms; ${largest.ms} ms for ${largest.records} records`,
      '',
      `duplicate effects            ${report.duplicateEffects}`,
      `effects without a record     ${report.effectsWithoutRecord}`,
      `succeeded without an effect  ${report.succeededWithoutEffect}`,
      `operations outside indexes   ${report.outsideIndexes}`,
      `stale index entries          ${report.staleEntries}`,
      `not terminal, no operator    ${report.notSettled}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const problems =
      report.duplicateEffects +
      report.effectsWithoutRecord +
      report.succeededWithoutEffect +
      report.outsideIndexes +
      report.staleEntries +
      report.notSettled;
    return problems === 0 ? 0 : 1;
  } finally {
    await target.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

process.once('SIGINT', () => void killAllStacks().finally(() => process.exit(130)));
main().then(
  (code) => process.exit(code),
  async (error: unknown) => {
    process.stderr.write(
      `soak: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    await killAllStacks();
    process.exit(1);
  },
);
