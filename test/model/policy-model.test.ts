import { fc, it } from '@fast-check/vitest';
import { afterAll, beforeAll, describe } from 'vitest';
import * as z from 'zod';
import { operationKey } from '../../functions/contract/keys';
import { downstreamKey } from '../../functions/domain/downstream-key';
import type { AnyTool, ToolContext } from '../../functions/domain/tool';
import { prepareCall } from '../../functions/engine/prepare-call';
import { LedgerStore } from '../../functions/ledger/ledger-store';
import { logger } from '../../functions/observability/logger';
import { ToolRegistry } from '../../functions/tools/registry';
import { coverage, coverageLine } from './support/coverage';
import { violations } from './support/invariants';
import { scriptedArguments } from './support/model-tools';
import { modelParams, modelTimeout, stallBeforeExecute } from './support/params';
import { quiesce } from './support/quiesce';
import { SCRIPTED_KINDS, type Schedule, scheduleArb } from './support/schedule';
import { startSharedEnv } from './support/shared-env';
import { traceUnseen } from './support/trace-file';
import { replaySchedule, traceLine } from './support/trace-replay';
import { type ModelProcess, type SharedEnv, World } from './support/world';

/**
 * The model-based suite with a tool's policy that changes between the steps of a schedule, as
 * redeploys do: a scripted tool becomes a read and a write again, gains or loses its approval rule,
 * gets another attempt budget, or a schema whose default for a field moves (or that no longer has the
 * field). A redeploy reaches some worker processes now and the others when they restart, so the API
 * and the executor may disagree about a tool for as long as the schedule likes. The guarantees are
 * those of the whole suite (`support/invariants.ts`), plus the one this file is about: an attempt of
 * an operation only ever runs under a tool that still matches the policy the operation was reserved
 * under; a tool that no longer matches hands the operation to an operator (`policy_changed`), who
 * resolves it truthfully from the effect log.
 *
 * What the model allows where the contract does: a caller's retry whose arguments a moved default now
 * normalizes differently is an `idempotency_key_reused` conflict (it is another call), and a call made
 * while a deployment declares the tool a read is answered from the read path without a ledger record
 * (the model's read variant of a tool applies no effect, so such an answer is checked by nothing but
 * the absence of effects).
 */

type PolicyKind = 'scripted.effect' | 'scripted.unsure' | 'scripted.plain' | 'scripted.guarded';
const KINDS = SCRIPTED_KINDS as readonly PolicyKind[];

/** One tool's deployed policy. `schema`: none (no `mode` field), or `mode` defaulting to a or b. */
interface Setting {
  effect: 'write' | 'read';
  approval: boolean;
  attempts: 1 | 2 | 3;
  schema: 'none' | 'a' | 'b';
}
type Deployment = Record<PolicyKind, Setting>;

/** A redeploy of one tool's policy: which field moves, and which worker slots load it now. */
interface Redeploy {
  kind: PolicyKind;
  change: Partial<Setting>;
  /** `all`: every process; else the slots that load it now (the others on their next restart). */
  reach: 'all' | number[];
}

interface PolicySchedule {
  schedule: Schedule;
  /** Index i: the redeploy before group i; the one past the last group: before the final drive. */
  redeploys: (Redeploy | null)[];
}

const MAX_GROUPS = 6;

const redeployArb: fc.Arbitrary<Redeploy> = fc.record({
  kind: fc.constantFrom(...KINDS),
  change: fc.oneof(
    fc.record({ effect: fc.constantFrom<Setting['effect']>('read', 'write') }),
    fc.record({ approval: fc.boolean() }),
    fc.record({ attempts: fc.constantFrom<Setting['attempts']>(1, 2, 3) }),
    fc.record({ schema: fc.constantFrom<Setting['schema']>('none', 'a', 'b') }),
  ),
  reach: fc.oneof(
    fc.constant<'all'>('all'),
    fc.uniqueArray(fc.nat({ max: 2 }), { minLength: 1, maxLength: 2 }),
  ),
});

const policyScheduleArb: fc.Arbitrary<PolicySchedule> = fc.record({
  schedule: scheduleArb({
    kinds: SCRIPTED_KINDS,
    maxOps: 4,
    maxGroups: MAX_GROUPS,
    maxStepsPerGroup: 3,
    stallBeforeExecute: stallBeforeExecute(),
  }),
  redeploys: fc.array(
    fc.oneof({ weight: 2, arbitrary: redeployArb }, { weight: 1, arbitrary: fc.constant(null) }),
    { minLength: MAX_GROUPS + 1, maxLength: MAX_GROUPS + 1 },
  ),
});

const BASE: Deployment = {
  'scripted.effect': { effect: 'write', approval: false, attempts: 3, schema: 'none' },
  'scripted.unsure': { effect: 'write', approval: false, attempts: 2, schema: 'none' },
  'scripted.plain': { effect: 'write', approval: false, attempts: 3, schema: 'none' },
  'scripted.guarded': { effect: 'write', approval: true, attempts: 3, schema: 'none' },
};

/** A deployment with one change applied. A read tool that requires approval is refused at build, so a
 *  redeploy that would make one keeps the read and drops the approval rule. */
function redeployed(from: Deployment, r: Redeploy): Deployment {
  const next: Setting = { ...from[r.kind], ...r.change };
  if (next.effect === 'read') next.approval = false;
  return { ...from, [r.kind]: next };
}

const withMode = {
  a: scriptedArguments.extend({ mode: z.enum(['a', 'b']).default('a') }),
  b: scriptedArguments.extend({ mode: z.enum(['a', 'b']).default('b') }),
};

/** What the model saw of policies across the run. */
const policyStats = {
  redeploys: 0,
  splitDeployments: 0,
  heldForOperator: 0,
  readAnswers: 0,
  conflictsAfterSchemaMove: 0,
  attemptsChecked: 0,
};

/** Deploys tool policies into one world's processes, and checks every attempt against its record. */
class Deployments {
  latest: Deployment = BASE;
  private readonly bySlot = new Map<number, Deployment>();
  private readonly procs = new Map<number, ModelProcess>();
  private readonly registries = new Map<string, ToolRegistry>();
  private store!: LedgerStore;
  /** Tools whose schema moved at some point of the schedule. */
  readonly schemaMoved = new Set<string>();
  world!: World;

  constructor(private readonly env: SharedEnv) {}

  attach(world: World): void {
    this.world = world;
    this.store = new LedgerStore({ client: this.env.admin, tableName: world.table });
  }

  /** Wires a new process: a slot's own deployment, or the newest one (restarts and the final drive). */
  onProcess(proc: ModelProcess, slot: number | undefined): void {
    if (slot === undefined) {
      proc.deps.tools = this.registry(this.latest);
      return;
    }
    this.bySlot.set(slot, this.latest);
    this.procs.set(slot, proc);
    proc.deps.tools = this.registry(this.latest);
  }

  apply(r: Redeploy): void {
    policyStats.redeploys += 1;
    if (r.change.schema !== undefined && r.change.schema !== this.latest[r.kind].schema) {
      this.schemaMoved.add(this.world.scripted.build()[r.kind].name);
    }
    this.latest = redeployed(this.latest, r);
    const slots = this.world.schedule.processes.map((_, i) => i);
    for (const slot of slots) {
      if (r.reach !== 'all' && !r.reach.includes(slot)) continue;
      const next = redeployed(this.bySlot.get(slot) ?? BASE, r);
      this.bySlot.set(slot, next);
      const proc = this.procs.get(slot);
      if (proc) proc.deps.tools = this.registry(next);
    }
    const distinct = new Set([...this.bySlot.values()].map((d) => JSON.stringify(d)));
    if (distinct.size > 1) policyStats.splitDeployments += 1;
  }

  /** The registry of a deployment: the world's tools with the scripted ones under their settings. */
  registry(deployment: Deployment): ToolRegistry {
    const key = JSON.stringify(deployment);
    const known = this.registries.get(key);
    if (known) return known;
    const names = this.world.scripted.build();
    const replaced = new Map<string, AnyTool>();
    for (const kind of KINDS) {
      const name = names[kind].name;
      replaced.set(name, this.variant(this.world.registry.get(name), deployment[kind]));
    }
    const registry = new ToolRegistry(this.world.registry.list().map((t) => replaced.get(t.name) ?? t));
    this.registries.set(key, registry);
    return registry;
  }

  /** The digest of an operation's arguments variant under a schema. */
  digestUnder(schema: Setting['schema'], toolName: string, operationId: string, args: unknown): string {
    const kind = KINDS.find((k) => this.world.scripted.build()[k].name === toolName) ?? 'scripted.effect';
    return prepareCall(
      this.registry({ ...BASE, [kind]: { ...BASE[kind], schema } }),
      operationId,
      toolName,
      args,
    ).digest;
  }

  private variant(base: AnyTool, setting: Setting): AnyTool {
    const schema = setting.schema === 'none' ? scriptedArguments : withMode[setting.schema];
    return {
      ...base,
      effect: setting.effect,
      requiresApproval: setting.approval,
      maxAttempts: setting.attempts,
      schema,
      execute: (args: unknown, ctx: ToolContext) => {
        this.watch(base.name, setting, ctx);
        // A read is a read: the deployment that declares one runs no effect.
        if (setting.effect === 'read') return Promise.resolve({ ok: true, read: true });
        return base.execute(args, ctx);
      },
    };
  }

  /**
   * Checks in the background (the world waits for it like for a tool) that a ledger attempt runs
   * under a tool that matches the policy its operation was reserved under.
   */
  private watch(tool: string, setting: Setting, ctx: ToolContext): void {
    const check = (async () => {
      const record = await this.store.get(operationKey(ctx.tenant, ctx.operationId));
      if (record?.policy?.execution !== 'ledger') return;
      if (ctx.downstreamKey !== downstreamKey(record.tenant, record.operation_id, record.reservation_id))
        return;
      policyStats.attemptsChecked += 1;
      const key = `${ctx.tenant}#${ctx.operationId}`;
      const drift: string[] = [];
      if (record.policy.effect !== setting.effect)
        drift.push(`declared ${setting.effect}, reserved ${record.policy.effect}`);
      if (setting.approval && !record.policy.requires_approval)
        drift.push('requires approval now, reserved without one');
      const stored = JSON.parse(record.arguments) as { mode?: string };
      if (stored.mode === undefined && setting.schema !== 'none') drift.push('its schema now adds a default');
      if (stored.mode !== undefined && setting.schema === 'none')
        drift.push('its schema now refuses the arguments');
      if (drift.length > 0) {
        this.world.anomalies.push(
          `${key}: attempt ${ctx.attempt} of ${tool} ran under a changed policy (${drift.join('; ')})`,
        );
      }
    })();
    const inflight = this.world.inflight;
    inflight.add(check);
    check.finally(() => inflight.delete(check)).catch(() => undefined);
  }
}

async function runPolicySchedule(env: SharedEnv, ps: PolicySchedule): Promise<void> {
  const deployments = new Deployments(env);
  const world = await World.create(env, ps.schedule, {
    onProcess: (proc, slot) => deployments.onProcess(proc, slot),
  });
  deployments.attach(world);
  try {
    // Each operation's arguments, as each schema normalizes them, belong to the same variant.
    for (const op of world.ops) {
      const extra = new Map<string, 0 | 1>();
      for (const schema of ['a', 'b'] as const) {
        for (const v of [0, 1] as const) {
          extra.set(deployments.digestUnder(schema, op.toolName, op.operationId, op.args[v]), v);
        }
      }
      const original = op.variantOf;
      op.variantOf = (digest) => original(digest) ?? extra.get(digest);
    }
    for (const [i, group] of ps.schedule.groups.entries()) {
      const r = ps.redeploys[i];
      if (r) deployments.apply(r);
      await world.run(group);
    }
    const last = ps.redeploys[ps.schedule.groups.length];
    if (last) deployments.apply(last);
    const end = await quiesce(world);
    coverage.schedules += 1;
    coverage.operations += world.ops.length;
    coverage.maxRounds = Math.max(coverage.maxRounds, end.rounds);

    // What the contract allows after a policy change (see the top of this file).
    // A conflict the read path refused (a read's idempotency record of other arguments): a read's answer.
    const readConflicts = world.conflicts.filter((c) =>
      world.logs.some((l) => l.request_id === c.requestId && l.state_before === null),
    );
    for (const c of readConflicts) if (c.requestId) world.readRequests.add(c.requestId);
    world.conflicts.splice(
      0,
      world.conflicts.length,
      ...world.conflicts.filter((c) => !readConflicts.includes(c)),
    );
    policyStats.readAnswers += world.readRequests.size;
    const moved = world.conflicts.filter((c) => deployments.schemaMoved.has(world.op(c.op).toolName));
    policyStats.conflictsAfterSchemaMove += moved.length;
    world.conflicts.splice(0, world.conflicts.length, ...world.conflicts.filter((c) => !moved.includes(c)));
    const finalConflict = /^final-(warm|cold) replay of (\S+): unexpected IdempotencyConflictError/;
    for (let i = world.anomalies.length - 1; i >= 0; i--) {
      const match = finalConflict.exec(world.anomalies[i] ?? '');
      const op = match ? world.ops.find((o) => o.key === match[2]) : undefined;
      if (op && deployments.schemaMoved.has(op.toolName)) world.anomalies.splice(i, 1);
    }
    policyStats.heldForOperator += world.logs.filter((l) => l.outcome_code === 'policy_changed').length;

    const found = await violations(env, world, end);
    const ledgerLines = world.logs.filter((line) => !world.readRequests.has(line.request_id));
    found.push(...replaySchedule(ledgerLines, (line) => world.keyOf(line), world.unseenWrites));
    traceUnseen(world.table, world.unseenWrites);
    if (found.length > 0) throw new Error(`invariants violated:\n- ${found.join('\n- ')}`);
  } finally {
    await world.dispose();
  }
}

let shared: Awaited<ReturnType<typeof startSharedEnv>>;
beforeAll(async () => {
  shared = await startSharedEnv();
  logger.setLogLevel('SILENT');
});
afterAll(async () => {
  console.log(coverageLine());
  console.log(traceLine());
  console.log(
    `policy model: redeploys=${policyStats.redeploys} split_deployments=${policyStats.splitDeployments} ` +
      `held_for_operator=${policyStats.heldForOperator} read_answers=${policyStats.readAnswers} ` +
      `conflicts_after_schema_move=${policyStats.conflictsAfterSchemaMove} attempts_checked=${policyStats.attemptsChecked}`,
  );
  await shared?.stop();
});

const RUNS = 400;

describe('model-based: a tool policy that changes between the steps of a schedule', () => {
  it.prop([policyScheduleArb], modelParams<[PolicySchedule]>(RUNS))(
    'redeploys that disagree between processes: no effect twice, replays equal the first outcome, nothing lost or stuck, no attempt under a changed policy',
    async (ps) => {
      await runPolicySchedule(shared.env, ps);
    },
    modelTimeout(RUNS),
  );
});
