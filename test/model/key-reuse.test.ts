import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fc, it } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { downstreamKey } from '../../functions/domain/downstream-key';
import type { OperationRecord } from '../../functions/domain/operation';
import { isTerminal } from '../../functions/domain/states';
import { type AnyTool, NotAppliedError, UncertainOutcomeError } from '../../functions/domain/tool';
import { logger } from '../../functions/observability/logger';
import { builtinTools } from '../../functions/tools/builtin';
import type { ToolFactory } from '../../functions/tools/registry';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { captureOutput } from '../http/support';
import { startWorld, type World } from '../security/world';
import { useDynalite } from '../support/dynalite';
import { modelParams, modelTimeout } from './support/params';
import { replaySchedule, traceLine } from './support/trace-replay';

/**
 * The model-based test of key expiry and reuse. Each run generates a few operation IDs, each used for
 * two or three successive operations ("lives"): a life runs with faults on its attempts (the worker
 * dies before or after the effect, or knows it did not start), is driven to a terminal state by
 * executors, reconciler passes, client retries and a truthful operator, and then the clock moves past
 * the record's retention, so the next life reuses the key as a new operation. The tools are the
 * shipped `workspace.append_line` (non-idempotent, reconciled by markers) and `webhook.post` to a
 * target that dedupes on `Idempotency-Key` forever (longer than any retention).
 *
 * Invariants, per life (one reservation):
 * - at most one effect per reservation;
 * - a reservation ends `succeeded` only if its own effect happened (never satisfied by an earlier
 *   reservation's effect, marker or downstream deduplication);
 * - every life of a key has a downstream key of its own, the same for all of its attempts.
 *
 * And per run: every transition line is allowed by the SPIN model's transition relation
 * (`support/trace-replay.ts`).
 */

type Fault = 'none' | 'crash_before' | 'crash_after' | 'not_applied';

interface Life {
  tool: 'append' | 'webhook';
  /** Reuse the previous life's arguments exactly (the hardest case: nothing tells them apart). */
  sameArgs: boolean;
  /** Faults of attempts 1, 2, … (then none). */
  faults: Fault[];
  /** After a known not-applied attempt, the client retries (else the reconciler re-enqueues). */
  clientRetries: boolean;
}

const lifeArb: fc.Arbitrary<Life> = fc.record({
  tool: fc.constantFrom('append' as const, 'webhook' as const),
  sameArgs: fc.boolean(),
  faults: fc.array(
    fc.oneof(
      { weight: 1, arbitrary: fc.constant<Fault>('none') },
      { weight: 2, arbitrary: fc.constantFrom<Fault>('crash_before', 'crash_after', 'not_applied') },
    ),
    { maxLength: 2 },
  ),
  clientRetries: fc.boolean(),
});

/** Keys × lives. */
const scheduleArb = fc.array(fc.array(lifeArb, { minLength: 2, maxLength: 3 }), {
  minLength: 1,
  maxLength: 2,
});

const RUNS = 40;
const RETENTION_PLUS_A_DAY_MS = (2_592_000 + 86_400) * 1000;

const db = useDynalite();
let world: World;
let ws: string;
let target: WebhookTarget;
/** Faults still to come, by operation ID. */
const plan = new Map<string, Fault[]>();
/** Effects that happened, by downstream key (the ground truth the operator and the checks use). */
const effects = new Map<string, number>();

function effectsOf(dkey: string): number {
  // The webhook target is the truth for webhooks: a deduplicated request is no effect.
  const hooks = target.hits.filter((hit) => hit.applied && hit.idempotencyKey === `"${dkey}"`).length;
  return (effects.get(dkey) ?? 0) + hooks;
}

/** The shipped tools, with faults injected around their real effect. */
const faultyTools: ToolFactory = (env) =>
  builtinTools(env).map((tool): AnyTool => {
    if (tool.name !== 'workspace.append_line' && tool.name !== 'webhook.post') return tool;
    return {
      ...tool,
      async execute(args, ctx) {
        const fault = plan.get(ctx.operationId)?.shift() ?? 'none';
        if (fault === 'crash_before')
          throw new UncertainOutcomeError('worker_died', 'died before the effect');
        if (fault === 'not_applied') throw new NotAppliedError('not_started', 'known not started');
        const result = await tool.execute(args, ctx);
        if (tool.name === 'workspace.append_line')
          effects.set(ctx.downstreamKey, (effects.get(ctx.downstreamKey) ?? 0) + 1);
        if (fault === 'crash_after') throw new UncertainOutcomeError('worker_died', 'died after the effect');
        return result;
      },
    };
  });

beforeAll(async () => {
  ws = await mkdtemp(path.join(tmpdir(), 'tool-ledger-model-reuse-'));
  target = await startWebhookTarget({ dedupeByKey: true });
  world = await startWorld(db, faultyTools, {
    TOOL_LEDGER_WORKSPACE_DIR: ws,
    TOOL_LEDGER_WEBHOOK_ALLOW: target.origin,
    TOOL_LEDGER_WEBHOOK_IDEMPOTENT: target.origin,
    TOOL_LEDGER_MAX_RECONCILE_CHECKS: '1',
  });
  logger.setLogLevel('SILENT');
});

afterAll(async () => {
  console.log(traceLine());
  await target?.close();
  if (ws) await rm(ws, { recursive: true, force: true });
});

let runCounter = 0;

async function record(id: string): Promise<OperationRecord> {
  const found = await world.runtime.deps.store.get(operationKey('acme', id));
  if (!found) throw new Error(`no record for ${id}`);
  return found;
}

/** Runs one life of `id` to a terminal state; returns its record. */
async function live(id: string, keyIndex: number, lifeIndex: number, life: Life): Promise<OperationRecord> {
  plan.set(id, [...life.faults]);
  const tag = life.sameArgs ? `k${keyIndex}` : `k${keyIndex}-l${lifeIndex}`;
  const body =
    life.tool === 'append'
      ? { tool: 'workspace.append_line', arguments: { path: 'journal.txt', line: `${id}-${tag}` } }
      : { tool: 'webhook.post', arguments: { url: `${target.origin}/${id}`, json: { tag } } };
  const submit = () => world.call({ method: 'POST', path: '/v1/operations', key: id, body, token: 'all-a' });
  const first = await submit();
  expect(first.body.replayed, `${id} life ${lifeIndex} must be a new operation`).toBe(false);
  for (let round = 0; round < 16; round += 1) {
    const current = await record(id);
    if (isTerminal(current.state)) return current;
    switch (current.state) {
      case 'uncertain':
      case 'needs_reconciliation': {
        if (current.state === 'uncertain' && round % 2 === 0) {
          world.advance(60_000);
          await world.reconcile();
          break;
        }
        const applied = effectsOf(downstreamKey('acme', id, current.reservation_id)) > 0;
        await world.call({
          method: 'POST',
          path: `/v1/operations/${id}/resolution`,
          token: 'operator-a',
          key: null,
          body: { outcome: applied ? 'applied' : 'not_applied', attempt: current.attempt },
        });
        break;
      }
      case 'failed_retryable':
        if (life.clientRetries) await submit();
        else {
          world.advance(600_000);
          await world.reconcile();
          await world.deliver();
        }
        break;
      default:
        world.advance(600_000);
        await world.reconcile();
        await world.deliver();
    }
  }
  throw new Error(`${id} life ${lifeIndex} did not end: ${(await record(id)).state}`);
}

describe('model-based: keys reused after their records expired', () => {
  it.prop([scheduleArb], modelParams<[Life[][]]>(RUNS))(
    'at most one effect per reservation, and a new reservation is never satisfied by an old one’s effect or marker',
    async (schedule) => {
      runCounter += 1;
      const problems: string[] = [];
      let appendEffects = 0;
      const firstLine = world.transitions.length;
      await captureOutput(async () => {
        for (const [keyIndex, lives] of schedule.entries()) {
          const id = `reuse-${process.pid}-${runCounter}-${keyIndex}`;
          const seenKeys = new Set<string>();
          for (const [lifeIndex, life] of lives.entries()) {
            const end = await live(id, keyIndex, lifeIndex, life);
            const dkey = downstreamKey('acme', id, end.reservation_id);
            const count = effectsOf(dkey);
            if (life.tool === 'append') appendEffects += count;
            if (seenKeys.has(dkey)) problems.push(`${id} life ${lifeIndex} reuses an earlier downstream key`);
            seenKeys.add(dkey);
            if (count > 1) problems.push(`${id} life ${lifeIndex}: ${count} effects for one reservation`);
            if (end.state === 'succeeded' && count !== 1)
              problems.push(
                `${id} life ${lifeIndex}: succeeded (${end.outcome_code}) without its own effect`,
              );
            if (end.state !== 'succeeded' && count !== 0)
              problems.push(`${id} life ${lifeIndex}: ${end.state} although its effect happened`);
            const hookKeys = new Set(
              target.hits.filter((hit) => hit.path === `/${id}`).map((hit) => hit.idempotencyKey),
            );
            if (
              life.tool === 'webhook' &&
              ![...hookKeys].every((k) => k === undefined || seenKeys.has(k.slice(1, -1)))
            )
              problems.push(`${id} life ${lifeIndex}: a request carried a key of no reservation`);
            world.advance(RETENTION_PLUS_A_DAY_MS);
          }
        }
      });
      // Its transition lines, against the model: the faults here are the tools' own (a worker dies as
      // far as the tool is concerned), every ledger write answers, so no move may be missing.
      problems.push(...replaySchedule(world.transitions.slice(firstLine), (line) => line.operation_id));
      // The journal holds exactly the appends the reservations made, no more.
      const journal = await readFile(path.join(ws, 'acme', 'journal.txt'), 'utf8').catch(() => '');
      const lines = journal
        .split('\n')
        .filter((line) => line.startsWith(`reuse-${process.pid}-${runCounter}-`));
      expect(problems).toEqual([]);
      expect(lines).toHaveLength(appendEffects);
    },
    modelTimeout(RUNS),
  );
});
