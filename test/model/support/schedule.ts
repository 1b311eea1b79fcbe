import { fc } from '@fast-check/vitest';

/**
 * The language of the model-based test: a schedule is a small world (operations of two tenants that
 * share operation IDs, worker processes, settings) and a list of groups. A group is either steps that
 * run concurrently (`Promise.all`) or a clock advance. Everything a step does is decided here, so a
 * schedule printed by fast-check says exactly what happened to which operation.
 */

/** The tools an operation can use. `scripted.*` are in-memory tools; the rest are the shipped tools. */
export type ToolKind =
  /** Truthful reconcile from its effect log. */
  | 'scripted.effect'
  /** Reconcile always answers `unknown`, so uncertainty ends with an operator. */
  | 'scripted.unsure'
  /** No reconcile, not downstream-idempotent: uncertainty goes to `needs_reconciliation`. */
  | 'scripted.plain'
  /** Requires approval; truthful reconcile. */
  | 'scripted.guarded'
  | 'workspace.write_file'
  | 'workspace.append_line'
  /** Requires approval. */
  | 'workspace.delete_file'
  /** `webhook.post` to a counting server that does not dedupe. */
  | 'webhook.plain'
  /** `webhook.post` to a counting server listed as downstream-idempotent (dedupes on the key). */
  | 'webhook.idempotent'
  /** `webhook.post` to a port where nothing listens: every attempt is known not applied. */
  | 'webhook.dead';

/** Every scripted tool kind. */
export const SCRIPTED_KINDS: readonly ToolKind[] = [
  'scripted.effect',
  'scripted.unsure',
  'scripted.plain',
  'scripted.guarded',
];

/** Every kind backed by a shipped tool. */
export const REAL_KINDS: readonly ToolKind[] = [
  'workspace.write_file',
  'workspace.append_line',
  'workspace.delete_file',
  'webhook.plain',
  'webhook.idempotent',
  'webhook.dead',
];

/** What a scripted tool does on one attempt. */
export type ScriptedBehaviour =
  | 'ok'
  | 'terminal'
  | 'not_applied'
  | 'uncertain_applied'
  | 'uncertain_not_applied'
  /** Applies, then throws a plain Error whose message carries the arguments (a canary leak test). */
  | 'throw_applied'
  /** Never returns; honours the abort signal; nothing applied. */
  | 'hang'
  | 'apply_then_hang';

/** What a counting webhook server does with one arriving request. */
export type HookBehaviour = 'ok' | 'apply_503' | 'noapply_503' | 'reject_400' | 'apply_reset';

/** One operation of the world: a tenant, an operation ID shared between tenants, a tool, scripts. */
export interface OpSpec {
  tenant: 0 | 1;
  id: number;
  kind: ToolKind;
  /** Scripted tools: behaviour of attempt n at index n-1 (then `ok`). */
  attempts: ScriptedBehaviour[];
  /** Webhook servers: behaviour of the n-th arriving request for this key (then `ok`). */
  arrivals: HookBehaviour[];
  /** Whether the final drive resolves this operation when it needs an operator. */
  finalOperator: boolean;
  /** Whether the final drive approves this operation if it still awaits approval (else it expires). */
  finalApprove: boolean;
}

/** Faults of one step, applied to the DynamoDB requests (and queue sends) that step makes. */
export interface FaultSpec {
  /** The process dies before sending, or right after receiving the response of, its n-th request. */
  crash?: { at: number; when: 'before' | 'after' };
  /** Throttling (fails before sending) or a lost response (sent, then lost) on matching requests. */
  inject?: {
    command: 'PutItemCommand' | 'UpdateItemCommand' | 'GetItemCommand' | 'QueryCommand';
    kind: 'throttle' | 'lost';
    /** Matching requests let through first. */
    skip: number;
    /** Consecutive matching requests hit (SDK retries included). */
    times: number;
  };
  /** Every queue send of this step fails. */
  queueDown?: boolean;
  /**
   * The worker pauses (a GC pause, a stalled connection) while the world goes on, and resumes after
   * the clock has moved and others have acted: after its outcome is known and before its commit, or
   * after its claim landed and before `execute` starts.
   */
  stall?: 'before_commit' | 'before_execute';
}

/** A step that runs inside a concurrent group. */
export type Step =
  | { kind: 'submit'; proc: number; op: number; mode: 'sync' | 'async'; variant: 0 | 1; fault: FaultSpec }
  | { kind: 'deliver'; proc: number; pick: number; duplicate: boolean; fault: FaultSpec }
  | { kind: 'reconcile'; procs: number[]; fault: FaultSpec }
  | { kind: 'approve'; proc: number; op: number; decision: 'approve' | 'reject'; variant: 0 | 1 }
  | { kind: 'resolve'; proc: number; op: number; ifNotApplied: 'not_applied' | 'failed' }
  | { kind: 'lose'; pick: number };

/** A group: concurrent steps, or the clock moving forward between groups. */
export type Group = { kind: 'steps'; steps: Step[] } | { kind: 'advance'; ms: number };

/** One generated schedule. */
export interface Schedule {
  ops: OpSpec[];
  /** SDK `maxAttempts` of each worker process slot. */
  processes: (1 | 3)[];
  /** Attention GSI shards. */
  shards: number;
  /** `tight`: the sync budget is shorter than every tool's timeout, so every call runs asynchronously. */
  syncBudget: 'normal' | 'tight';
  groups: Group[];
}

/** Size knobs of the generated schedules. */
export interface ScheduleShape {
  kinds: readonly ToolKind[];
  maxOps: number;
  maxGroups: number;
  maxStepsPerGroup: number;
  /** Generate stalls between a claim and `execute` (off while the engine starts late attempts). */
  stallBeforeExecute: boolean;
}

const scriptedBehaviour: fc.Arbitrary<ScriptedBehaviour> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<ScriptedBehaviour>('ok') },
  {
    weight: 2,
    arbitrary: fc.constantFrom<ScriptedBehaviour>(
      'terminal',
      'not_applied',
      'uncertain_applied',
      'uncertain_not_applied',
      'throw_applied',
      'hang',
      'apply_then_hang',
    ),
  },
);

const hookBehaviour: fc.Arbitrary<HookBehaviour> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<HookBehaviour>('ok') },
  {
    weight: 2,
    arbitrary: fc.constantFrom<HookBehaviour>('apply_503', 'noapply_503', 'reject_400', 'apply_reset'),
  },
);

/**
 * Faults: most steps have none; crashes and injected faults at a random request boundary; stalls.
 * `stallBeforeExecute` adds pauses between a claim and `execute` (see `found-bugs.test.ts`).
 */
export function faultArb(stallBeforeExecute: boolean): fc.Arbitrary<FaultSpec> {
  const stalls: fc.Arbitrary<FaultSpec> = fc.constantFrom<FaultSpec>(
    { stall: 'before_commit' },
    ...(stallBeforeExecute ? [{ stall: 'before_execute' as const }] : []),
  );
  return fc.oneof(
    { weight: 40, arbitrary: fc.constant<FaultSpec>({}) },
    {
      weight: 12,
      arbitrary: fc.record({
        crash: fc.record({ at: fc.integer({ min: 1, max: 5 }), when: fc.constantFrom('before', 'after') }),
      }),
    },
    {
      weight: 12,
      arbitrary: fc.record({
        inject: fc.record({
          command: fc.constantFrom('PutItemCommand', 'UpdateItemCommand', 'GetItemCommand', 'QueryCommand'),
          kind: fc.constantFrom('throttle', 'lost'),
          skip: fc.integer({ min: 0, max: 2 }),
          times: fc.integer({ min: 1, max: 2 }),
        }),
      }),
    },
    // A commit that never becomes durable: every UpdateItem of the step is throttled. The engine's own
    // retries sleep about 0.75 s in total, so this one is rare.
    {
      weight: 1,
      arbitrary: fc.constant<FaultSpec>({
        inject: { command: 'UpdateItemCommand', kind: 'throttle', skip: 0, times: 99 },
      }),
    },
    { weight: 2, arbitrary: fc.constant<FaultSpec>({ queueDown: true }) },
    { weight: 5, arbitrary: stalls },
  );
}

const proc = fc.nat({ max: 7 });
const opRef = fc.nat({ max: 15 });

/** One step of a concurrent group. */
export function stepArb(stallBeforeExecute: boolean): fc.Arbitrary<Step> {
  const fault = faultArb(stallBeforeExecute);
  return fc.oneof(
    {
      weight: 10,
      arbitrary: fc.record({
        kind: fc.constant('submit' as const),
        proc,
        op: opRef,
        mode: fc.constantFrom('sync', 'sync', 'async'),
        variant: fc.oneof(
          { weight: 9, arbitrary: fc.constant(0 as const) },
          { weight: 1, arbitrary: fc.constant(1 as const) },
        ),
        fault,
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('deliver' as const),
        proc,
        pick: fc.nat({ max: 15 }),
        duplicate: fc.oneof(
          { weight: 4, arbitrary: fc.constant(false) },
          { weight: 1, arbitrary: fc.constant(true) },
        ),
        fault,
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('reconcile' as const),
        procs: fc.array(proc, { minLength: 1, maxLength: 2 }),
        fault,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('approve' as const),
        proc,
        op: opRef,
        decision: fc.constantFrom('approve', 'approve', 'approve', 'reject'),
        variant: fc.oneof(
          { weight: 9, arbitrary: fc.constant(0 as const) },
          { weight: 1, arbitrary: fc.constant(1 as const) },
        ),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('resolve' as const),
        proc,
        op: opRef,
        ifNotApplied: fc.constantFrom('not_applied', 'failed'),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('lose' as const), pick: fc.nat({ max: 15 }) }) },
  );
}

/** A schedule generator for one shape. */
export function scheduleArb(shape: ScheduleShape): fc.Arbitrary<Schedule> {
  const op = fc.record({
    tenant: fc.constantFrom(0 as const, 1 as const),
    id: fc.integer({ min: 0, max: 2 }),
    kind: fc.constantFrom(...shape.kinds),
    attempts: fc.array(scriptedBehaviour, { maxLength: 3 }),
    arrivals: fc.array(hookBehaviour, { maxLength: 3 }),
    finalOperator: fc.oneof(
      { weight: 3, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
    finalApprove: fc.boolean(),
  });
  const group: fc.Arbitrary<Group> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc
        .array(stepArb(shape.stallBeforeExecute), { minLength: 1, maxLength: shape.maxStepsPerGroup })
        .map((steps) => ({ kind: 'steps' as const, steps })),
    },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(1_000, 20_000, 120_000, 2_000_000)
        .map((ms) => ({ kind: 'advance' as const, ms })),
    },
  );
  return fc.record({
    ops: fc.uniqueArray(op, {
      minLength: 1,
      maxLength: shape.maxOps,
      selector: (o) => `${o.tenant}:${o.id}`,
    }),
    processes: fc.array(fc.constantFrom(1 as const, 3 as const), { minLength: 2, maxLength: 3 }),
    shards: fc.constantFrom(1, 1, 2),
    syncBudget: fc.oneof(
      { weight: 5, arbitrary: fc.constant('normal' as const) },
      { weight: 1, arbitrary: fc.constant('tight' as const) },
    ),
    groups: fc.array(group, { minLength: 1, maxLength: shape.maxGroups }),
  });
}
