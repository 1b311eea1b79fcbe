import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCrashSoak } from '../../scripts/soak/crash-soak';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';

/**
 * Crash consistency of local mode: dynalite writes an item and its index entries separately, so a
 * `kill -9` under load can leave records outside the indexes the reconciler and the operators read,
 * and index entries that show a state their record no longer has. Three kill -9 / restart cycles at
 * random instants under eight concurrent clients (the soak script runs fifty), then every operation
 * driven to its end, every record checked against both indexes, every effect counted.
 */

let target: WebhookTarget;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-consistency-'));
  target = await startWebhookTarget();
});

afterAll(async () => {
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('kill -9 at random instants under load, then restart', () => {
  it('leaves every record in the indexes, no stale entry, no duplicate effect, and every operation settled', async () => {
    const report = await runCrashSoak({
      dataDir,
      target,
      cycles: 3,
      concurrency: 8,
      settleTimeoutMs: 60_000,
    });
    const context = JSON.stringify(report);
    expect(report.operations, context).toBeGreaterThan(0);
    expect(report.records, context).toBeGreaterThan(0);
    expect(
      {
        duplicateEffects: report.duplicateEffects,
        effectsWithoutRecord: report.effectsWithoutRecord,
        succeededWithoutEffect: report.succeededWithoutEffect,
        outsideIndexes: report.outsideIndexes,
        staleEntries: report.staleEntries,
        notSettled: report.notSettled,
      },
      context,
    ).toEqual({
      duplicateEffects: 0,
      effectsWithoutRecord: 0,
      succeededWithoutEffect: 0,
      outsideIndexes: 0,
      staleEntries: 0,
      notSettled: 0,
    });
  }, 240_000);
});
