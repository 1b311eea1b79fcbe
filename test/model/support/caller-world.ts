import { randomBytes } from 'node:crypto';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fc } from '@fast-check/vitest';
import { loadConfig } from '../../../functions/config';
import { operationKey } from '../../../functions/contract/keys';
import { canonicalCall } from '../../../functions/domain/digest';
import { downstreamKey } from '../../../functions/domain/downstream-key';
import { LedgerError } from '../../../functions/domain/errors';
import type { OperationRecord, OperationSnapshot } from '../../../functions/domain/operation';
import { isTerminal } from '../../../functions/domain/states';
import { extendClaim } from '../../../functions/engine/caller-heartbeat';
import { recordCallerOutcome } from '../../../functions/engine/caller-outcome';
import { type Claim, submitCallerOperation } from '../../../functions/engine/caller-submit';
import { decideCallerVerdict } from '../../../functions/engine/caller-verdict';
import { createDeps, type LedgerDeps, newRequest } from '../../../functions/engine/ledger-deps';
import { getOperation } from '../../../functions/engine/read-operations';
import { reconcilePass } from '../../../functions/engine/reconcile';
import { resolveOperation } from '../../../functions/engine/resolution';
import { TerminalCache } from '../../../functions/engine/terminal-cache';
import type { WorkMessage, WorkQueue } from '../../../functions/engine/work-queue';
import { LedgerStore } from '../../../functions/ledger/ledger-store';
import { ensureLedgerTable } from '../../../functions/ledger/table';
import { MemoryLedgerMetrics } from '../../../functions/observability/metrics';
import type { TransitionLogLine } from '../../../functions/observability/transition-log';
import { ToolRegistry } from '../../../functions/tools/registry';
import { replaySchedule } from './trace-replay';

/**
 * The model of operations their caller executes: callers in their own processes run the protocol
 * (claim with a `claim_id` → heartbeat → effect → outcome; on `uncertain`, their own reconcile and a
 * verdict) against the engine functions behind the HTTP routes, on dynalite, while the schedule
 * crashes them between any two steps, loses the answers of their messages (the write landed, the
 * caller did not hear), delivers messages twice or late, moves the clock past leases and runs the
 * reconciler. Effects go to a counting target that a caller's reconcile (and a truthful operator) can
 * ask. Each schedule is then driven to quiescence and its guarantees checked.
 */

export const CALLER_TENANTS = ['acme', 'globex'] as const;
const TOOL = 'crm.create_contact';
const START = Date.UTC(2031, 0, 1);

/** What the caller's effect does on its nth call for an operation. */
export type EffectKind = 'ok' | 'terminal' | 'not_applied' | 'unknown_applied' | 'unknown_none';
/** A fault on one caller step. */
export type CallerFault = 'none' | 'lost' | 'crash_before' | 'crash_after' | 'dup';

export interface CallerOpSpec {
  tenant: 0 | 1;
  id: 0 | 1;
  leaseSeconds: 10 | 30;
  heartbeat: boolean;
  /** Its callers pass a `reconcile` to `ledger.run`; without one, an unknown outcome waits for an operator. */
  reconciles: boolean;
  operator: boolean;
  callers: 2 | 3;
  effects: EffectKind[];
}

export type CallerStep =
  | { kind: 'caller'; who: number; fault: CallerFault }
  | { kind: 'advance'; ms: number }
  | { kind: 'reconcile' }
  | { kind: 'late'; pick: number };

export interface CallerSchedule {
  ops: CallerOpSpec[];
  steps: CallerStep[];
}

function faultArb(lostWeight: number): fc.Arbitrary<CallerFault> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant<CallerFault>('none') },
    { weight: lostWeight, arbitrary: fc.constant<CallerFault>('lost') },
    { weight: 1, arbitrary: fc.constant<CallerFault>('crash_before') },
    { weight: 1, arbitrary: fc.constant<CallerFault>('crash_after') },
    { weight: 1, arbitrary: fc.constant<CallerFault>('dup') },
  );
}

const opArb: fc.Arbitrary<CallerOpSpec> = fc.record({
  tenant: fc.constantFrom<0 | 1>(0, 1),
  id: fc.constantFrom<0 | 1>(0, 1),
  leaseSeconds: fc.constantFrom<10 | 30>(10, 30),
  heartbeat: fc.boolean(),
  reconciles: fc.boolean(),
  operator: fc.boolean(),
  callers: fc.constantFrom<2 | 3>(2, 3),
  effects: fc.array(
    fc.constantFrom<EffectKind>(
      'ok',
      'ok',
      'ok',
      'terminal',
      'not_applied',
      'unknown_applied',
      'unknown_none',
    ),
    { minLength: 1, maxLength: 4 },
  ),
});

/**
 * 1–3 operations (two tenants may share an ID) and up to 40 steps; `lostWeight` (against 3 for no
 * fault and 1 for each of crash before, crash after, duplicate) is how often an answer is lost.
 */
export function callerScheduleArbWith(lostWeight: number): fc.Arbitrary<CallerSchedule> {
  return fc.record({
    ops: fc.uniqueArray(opArb, { minLength: 1, maxLength: 3, selector: (o) => `${o.tenant}#${o.id}` }),
    steps: fc.array(
      fc.oneof(
        {
          weight: 10,
          arbitrary: fc.record({
            kind: fc.constant('caller' as const),
            who: fc.nat(8),
            fault: faultArb(lostWeight),
          }),
        },
        {
          weight: 2,
          arbitrary: fc.record({
            kind: fc.constant('advance' as const),
            ms: fc.constantFrom(5_000, 15_000, 60_000),
          }),
        },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('reconcile' as const) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('late' as const), pick: fc.nat(30) }) },
      ),
      { maxLength: 40 },
    ),
  });
}

/** The suite's schedules: crash before, crash after, duplicate and lost answer equally likely. */
export const callerScheduleArb = callerScheduleArbWith(1);

/** Totals across a file's schedules, for its coverage line. */
export const callerCoverage = {
  schedules: 0,
  operations: 0,
  callers: 0,
  crashes: 0,
  lost: 0,
  duplicates: 0,
  late: 0,
  heartbeats: 0,
  verdicts: 0,
  resolutions: 0,
  effects: 0,
  finals: {} as Record<string, number>,
  maxRounds: 0,
};

export function callerCoverageLine(): string {
  const c = callerCoverage;
  const finals = Object.entries(c.finals)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([s, n]) => `${s}=${n}`)
    .join(' ');
  return (
    `caller model: ${c.schedules} schedules, ${c.operations} operations, ${c.callers} caller processes; ` +
    `crashes=${c.crashes} lost_answers=${c.lost} duplicates=${c.duplicates} late_deliveries=${c.late} ` +
    `heartbeats=${c.heartbeats} verdicts=${c.verdicts} operator_resolutions=${c.resolutions} effects=${c.effects}; ` +
    `final ${finals}; max final-drive rounds=${c.maxRounds}`
  );
}

/** An operation whose callers cannot reconcile always has an operator (else it would wait forever). */
function hasOperator(spec: CallerOpSpec): boolean {
  return spec.operator || !spec.reconciles;
}

/** The counting target: effects applied per operation (`tenant#id`), with the value each returned. */
class CountingTarget {
  readonly applied = new Map<string, unknown[]>();
  /** Which downstream keys each operation's effects carried. */
  readonly keys = new Map<string, Set<string>>();
  apply(op: string, key: string, value: unknown): void {
    this.applied.set(op, [...(this.applied.get(op) ?? []), value]);
    this.keys.set(op, new Set([...(this.keys.get(op) ?? []), key]));
    callerCoverage.effects += 1;
  }
  /** What a reconcile (or an operator) finds: the first effect's value, if any. */
  lookup(op: string): { applied: true; value: unknown } | { applied: false } {
    const list = this.applied.get(op) ?? [];
    return list.length > 0 ? { applied: true, value: list[0] } : { applied: false };
  }
}

class NoQueue implements WorkQueue {
  readonly messages: WorkMessage[] = [];
  async enqueue(message: WorkMessage): Promise<void> {
    this.messages.push(message);
  }
}

/** Error codes a caller may be answered with in this model (a 409 or a 404 over HTTP). */
const EXPECTED = new Set(['state_changed', 'operation_in_progress', 'not_found']);

interface Op {
  spec: CallerOpSpec;
  tenant: string;
  operationId: string;
  key: string;
  args: Record<string, unknown>;
  digest: string;
  effectCalls: number;
}

type Phase = 'start' | 'claim' | 'running' | 'effect' | 'outcome' | 'reconcile' | 'done';

interface Outcome {
  outcome: 'succeeded' | 'failed_terminal' | 'failed_retryable' | 'uncertain';
  result?: unknown;
  error?: { code: string; message: string };
}

let tableCounter = 0;

/** One caller process working on one operation; a crash replaces it with a new one. */
class CallerProc {
  phase: Phase = 'start';
  claimId = '';
  claim: Claim | undefined;
  localLease = 0;
  heartbeatDone = false;
  /** The broken caller's re-run: the same effect again, whatever its lease. */
  rerun = false;
  lastKind: EffectKind = 'ok';
  outcome: Outcome | undefined;
  verdictOn: OperationRecord | OperationSnapshot | undefined;
  finalAnswer: OperationRecord | OperationSnapshot | undefined;
  constructor(
    readonly op: Op,
    readonly deps: LedgerDeps,
  ) {}
}

export interface CallerWorldOptions {
  /** The broken caller: after a lost outcome answer it runs the effect again instead of re-posting. */
  rerunEffectAfterLostOutcome?: boolean;
  /** Deliver a duplicated outcome right after the first's answer (default: both at the same instant). */
  sequentialDuplicateOutcomes?: boolean;
}

async function settle<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  const [out] = await Promise.allSettled([promise]);
  return out as PromiseSettledResult<T>;
}

export class CallerWorld {
  now = START;
  readonly logs: TransitionLogLine[] = [];
  readonly anomalies: string[] = [];
  readonly target = new CountingTarget();
  readonly ops: Op[];
  /** Caller slots: `who` in a step picks one (modulo). */
  readonly slots: CallerProc[] = [];
  readonly answers: { op: Op; record: OperationRecord | OperationSnapshot; via: string }[] = [];
  private readonly sent: { label: string; send: () => Promise<unknown> }[] = [];
  private readonly store: LedgerStore;
  private readonly config;
  private readonly registry = new ToolRegistry([]);
  private readonly queue = new NoQueue();

  private constructor(
    private readonly admin: DynamoDBClient,
    readonly schedule: CallerSchedule,
    readonly table: string,
    private readonly options: CallerWorldOptions,
  ) {
    this.store = new LedgerStore({ client: admin, tableName: table });
    this.config = {
      ...loadConfig({}),
      tableName: table,
      leaseGraceMs: 1_000,
      maxReconcileChecks: 2,
      retryBaseMs: 2_000,
    };
    const salt = randomBytes(3).toString('hex');
    this.ops = schedule.ops.map((spec) => {
      const tenant = CALLER_TENANTS[spec.tenant];
      const operationId = `op-${salt}-${spec.id}`;
      // Two tenants sharing an ID send different arguments: a leak would show as a digest mismatch.
      const args = { contact: `${tenant}-contact-${spec.id}` };
      return {
        spec,
        tenant,
        operationId,
        key: `${tenant}#${operationId}`,
        args,
        digest: canonicalCall(TOOL, args).digest,
        effectCalls: 0,
      };
    });
    for (const op of this.ops) {
      for (let i = 0; i < op.spec.callers; i++) this.slots.push(new CallerProc(op, this.newDeps()));
    }
    callerCoverage.callers += this.slots.length;
  }

  static async create(
    admin: DynamoDBClient,
    schedule: CallerSchedule,
    options: CallerWorldOptions = {},
  ): Promise<CallerWorld> {
    tableCounter += 1;
    const table = `caller-model-${process.pid}-${tableCounter}`;
    await ensureLedgerTable(admin, table);
    return new CallerWorld(admin, schedule, table, options);
  }

  /** A process's own ledger wiring: the shared table, its own terminal cache, the world's clock. */
  newDeps(): LedgerDeps {
    return createDeps({
      store: this.store,
      tools: this.registry,
      config: this.config,
      queue: this.queue,
      clock: () => this.now,
      log: (line) => this.logs.push(line),
      metrics: new MemoryLedgerMetrics(),
      workerId: `c${randomBytes(3).toString('hex')}`,
      cache: new TerminalCache(100),
    });
  }

  async run(step: CallerStep): Promise<void> {
    if (step.kind === 'advance') this.now += step.ms;
    else if (step.kind === 'reconcile') await this.reconcilerPass();
    else if (step.kind === 'late') {
      const message = this.sent[step.pick % Math.max(1, this.sent.length)];
      if (!message) return;
      callerCoverage.late += 1;
      await this.quietly(message.send, `late ${message.label}`);
    } else {
      const index = step.who % this.slots.length;
      await this.step(index, step.fault);
    }
  }

  async reconcilerPass(): Promise<void> {
    const deps = this.newDeps();
    const summary = await reconcilePass(deps, newRequest(deps));
    if ((summary.actions.error ?? 0) > 0) this.anomalies.push('a reconciler pass had failing decisions');
    if (this.queue.messages.length > 0) this.anomalies.push('an operation its caller executes was enqueued');
  }

  /** Sends a message whose answer nobody hears: only unexpected errors count. */
  private async quietly(send: () => Promise<unknown>, label: string): Promise<void> {
    try {
      await send();
    } catch (error) {
      this.expect(error, label);
    }
  }

  private expect(error: unknown, label: string): void {
    if (error instanceof LedgerError && EXPECTED.has(error.code)) return;
    this.anomalies.push(`${label}: unexpected ${error instanceof LedgerError ? error.code : String(error)}`);
  }

  private crash(index: number): void {
    const old = this.slots[index] as CallerProc;
    this.slots[index] = new CallerProc(old.op, this.newDeps());
    callerCoverage.crashes += 1;
    callerCoverage.callers += 1;
  }

  /**
   * One step of a caller: one message (or its effect), under a fault. `lost`: the message lands, its
   * answer is not heard (the caller retries it as `ledger.run` does); `crash_*`: the process dies
   * before sending, or after it landed; `dup`: the message is delivered twice at once.
   */
  async step(index: number, fault: CallerFault): Promise<void> {
    const proc = this.slots[index] as CallerProc;
    if (proc.phase === 'done') return;
    if (proc.phase === 'start') {
      proc.claimId = randomBytes(24).toString('base64url');
      proc.phase = 'claim';
    }
    if (fault === 'crash_before') {
      this.crash(index);
      return;
    }
    const send = this.message(proc);
    if (!send) return; // a local step (a lost claim noticed): nothing sent
    if (proc.phase === 'effect') {
      // The effect is the caller's own work, not a message: it runs once per step; a crash right after
      // it is the fault that matters (the effect happened, the outcome was never sent).
      if (fault === 'dup' || fault === 'lost') fault = 'none';
    } else {
      this.sent.push({ label: `${proc.phase} ${proc.op.key}`, send: send.run });
    }
    if (fault === 'dup') callerCoverage.duplicates += 1;
    let settled: PromiseSettledResult<unknown>[];
    if (fault === 'dup' && proc.phase === 'outcome' && this.options.sequentialDuplicateOutcomes) {
      // The duplicate outcome arrives right after the first was answered.
      settled = [await settle(send.run())];
      settled.push(await settle(send.run()));
    } else {
      // Two deliveries of one message at the same instant (the first of them found that both logged
      // an outcome's transition when each took the other's write for its own lost answer).
      settled = await Promise.allSettled(fault === 'dup' ? [send.run(), send.run()] : [send.run()]);
    }
    const heard = settled[0] as PromiseSettledResult<unknown>;
    for (const extra of settled.slice(1)) {
      if (extra.status === 'rejected') this.expect(extra.reason, `duplicate ${proc.phase}`);
    }
    if (fault === 'crash_after') {
      if (heard.status === 'rejected') this.expect(heard.reason, `${proc.phase} before a crash`);
      this.crash(index);
      return;
    }
    if (fault === 'lost') {
      callerCoverage.lost += 1;
      if (heard.status === 'rejected') this.expect(heard.reason, `${proc.phase} (answer lost)`);
      if (proc.phase === 'outcome' && this.options.rerunEffectAfterLostOutcome) {
        proc.phase = 'effect';
        proc.rerun = true;
        await this.step(index, 'none');
      }
      return; // same phase: the same message again next time
    }
    await send.heard(heard);
  }

  /** The message a caller's phase sends, and what it does with the answer. */
  private message(
    proc: CallerProc,
  ): { run: () => Promise<unknown>; heard: (r: PromiseSettledResult<unknown>) => Promise<void> } | undefined {
    const { op, deps } = proc;
    const req = () => newRequest(deps);
    switch (proc.phase) {
      case 'claim': {
        const claimId = proc.claimId;
        return {
          run: () =>
            submitCallerOperation(deps, req(), {
              tenant: op.tenant,
              principal: 'agent-1',
              operationId: op.operationId,
              tool: TOOL,
              arguments: op.args,
              options: { leaseSeconds: op.spec.leaseSeconds, claimId },
            }),
          heard: async (r) => {
            if (r.status === 'rejected') return this.onRefusal(proc, r.reason, 'claim');
            const out = r.value as Awaited<ReturnType<typeof submitCallerOperation>>;
            this.answer(op, out.record, 'claim');
            if (out.kind === 'claimed') {
              proc.claim = out.claim;
              proc.localLease = out.claim.leaseExpiresAt;
              proc.heartbeatDone = !op.spec.heartbeat;
              proc.phase = 'running';
              return;
            }
            this.follow(proc, out.record);
          },
        };
      }
      case 'running': {
        const claim = proc.claim as Claim;
        if (this.now >= proc.localLease) {
          // ledger.run's lease keeper: no answered heartbeat before the lease ended, the claim is lost.
          this.lostClaim(proc);
          return undefined;
        }
        if (proc.heartbeatDone) {
          proc.phase = 'effect';
          return this.message(proc);
        }
        return {
          run: () => {
            callerCoverage.heartbeats += 1;
            return extendClaim(deps, req(), {
              tenant: op.tenant,
              operationId: op.operationId,
              token: claim.token,
            });
          },
          heard: async (r) => {
            if (r.status === 'rejected') {
              this.expect(r.reason, 'heartbeat');
              this.lostClaim(proc);
              return;
            }
            const out = r.value as Awaited<ReturnType<typeof extendClaim>>;
            this.answer(op, out.record, 'heartbeat');
            proc.localLease = out.leaseExpiresAt;
            proc.heartbeatDone = true;
          },
        };
      }
      case 'effect': {
        const claim = proc.claim as Claim;
        if (this.now >= proc.localLease && !proc.rerun) {
          this.lostClaim(proc);
          return undefined;
        }
        return {
          run: async () => {
            const kind = proc.rerun
              ? proc.lastKind
              : (op.spec.effects[op.effectCalls % op.spec.effects.length] as EffectKind);
            proc.rerun = false;
            proc.lastKind = kind;
            op.effectCalls += 1;
            let outcome: Outcome;
            if (kind === 'ok' || kind === 'unknown_applied') {
              const value = { contact: op.args.contact, created: `${op.key}/${op.effectCalls}` };
              this.target.apply(op.key, claim.downstreamKey, value);
              outcome =
                kind === 'ok'
                  ? { outcome: 'succeeded', result: value }
                  : { outcome: 'uncertain', error: { code: 'timeout', message: 'unknown' } };
            } else if (kind === 'terminal') {
              outcome = { outcome: 'failed_terminal', error: { code: 'invalid_contact', message: 'no' } };
            } else if (kind === 'not_applied') {
              outcome = { outcome: 'failed_retryable', error: { code: 'busy', message: 'not applied' } };
            } else {
              outcome = { outcome: 'uncertain', error: { code: 'timeout', message: 'unknown' } };
            }
            return outcome;
          },
          heard: async (r) => {
            if (r.status === 'rejected') throw r.reason;
            proc.outcome = r.value as Outcome;
            proc.phase = 'outcome';
          },
        };
      }
      case 'outcome': {
        const claim = proc.claim as Claim;
        const body = proc.outcome as Outcome;
        return {
          run: () =>
            recordCallerOutcome(deps, req(), {
              tenant: op.tenant,
              principal: 'agent-1',
              operationId: op.operationId,
              token: claim.token,
              outcome: body.outcome,
              ...(body.result !== undefined ? { result: body.result } : {}),
              ...(body.error !== undefined ? { error: body.error } : {}),
            }),
          heard: async (r) => {
            if (r.status === 'rejected') return this.onRefusal(proc, r.reason, 'outcome');
            const record = r.value as OperationRecord;
            this.answer(op, record, 'outcome');
            this.follow(proc, record);
          },
        };
      }
      case 'reconcile': {
        const record = proc.verdictOn as OperationRecord;
        const found = this.target.lookup(op.key);
        const key = downstreamKey(record.tenant, record.operation_id, record.reservation_id);
        return {
          run: () => {
            callerCoverage.verdicts += 1;
            return decideCallerVerdict(deps, req(), {
              tenant: op.tenant,
              principal: 'agent-1',
              operationId: op.operationId,
              attempt: record.attempt,
              verdict: found.applied ? 'applied' : 'not_applied',
              ...(found.applied ? { result: found.value } : {}),
              downstreamKey: key,
            });
          },
          heard: async (r) => {
            if (r.status === 'rejected') return this.onRefusal(proc, r.reason, 'verdict');
            const out = r.value as Awaited<ReturnType<typeof decideCallerVerdict>>;
            this.answer(op, out.record, 'verdict');
            this.follow(proc, out.record);
          },
        };
      }
      default:
        return undefined;
    }
  }

  /** A claim the caller no longer holds: it reports an unknown outcome (no effect ran), as `ledger.run`. */
  private lostClaim(proc: CallerProc): void {
    proc.outcome = { outcome: 'uncertain', error: { code: 'claim_lost', message: 'lost' } };
    proc.phase = 'outcome';
  }

  /** A 409/404: the caller reads the record and goes on from where it stands. */
  private async onRefusal(proc: CallerProc, error: unknown, label: string): Promise<void> {
    this.expect(error, label);
    try {
      const record = await getOperation(
        proc.deps,
        newRequest(proc.deps),
        proc.op.tenant,
        proc.op.operationId,
      );
      this.answer(proc.op, record, `${label} refused`);
      this.follow(proc, record);
    } catch (read) {
      this.expect(read, `read after ${label}`);
      proc.phase = 'start';
    }
  }

  /** What a caller does next from a record it was answered with. */
  private follow(proc: CallerProc, record: OperationRecord | OperationSnapshot): void {
    if (isTerminal(record.state)) {
      proc.phase = 'done';
      proc.finalAnswer = record;
    } else if (
      (record.state === 'uncertain' || record.state === 'needs_reconciliation') &&
      proc.op.spec.reconciles
    ) {
      proc.verdictOn = record as OperationRecord;
      proc.phase = 'reconcile';
    } else {
      proc.phase = 'start'; // held elsewhere, its next attempt due, or waiting for an operator: ask again
    }
  }

  private answer(op: Op, record: OperationRecord | OperationSnapshot, via: string): void {
    this.answers.push({ op, record, via });
  }

  /**
   * The final drive: the clock past every lease and backoff, a reconciler pass, truthful operators for
   * the operations that have one, and every caller (restarted if it crashed) running without faults
   * until its operation is terminal. Returns the rounds used, or undefined if it never got quiet.
   */
  async quiesce(maxRounds = 20): Promise<number | undefined> {
    for (let round = 1; round <= maxRounds; round++) {
      this.now += 600_000;
      await this.reconcilerPass();
      let open = 0;
      for (const op of this.ops) {
        const record = await this.store.get(operationKey(op.tenant, op.operationId));
        if (record && hasOperator(op.spec) && record.state === 'needs_reconciliation')
          await this.resolve(op, record);
      }
      for (let i = 0; i < this.slots.length; i++) {
        for (let n = 0; n < 8 && (this.slots[i] as CallerProc).phase !== 'done'; n++) {
          await this.step(i, 'none');
          const phase = (this.slots[i] as CallerProc).phase;
          if (phase === 'start') break; // held elsewhere: next round
        }
      }
      for (const op of this.ops) {
        const record = await this.store.get(operationKey(op.tenant, op.operationId));
        if (!record || !isTerminal(record.state)) open += 1;
      }
      const callersLeft = this.slots.some((s) => s.phase !== 'done');
      if (open === 0 && !callersLeft) return round;
    }
    return undefined;
  }

  /** A truthful operator: applied with the target's value when the effect happened, else not_applied. */
  private async resolve(op: Op, record: OperationRecord): Promise<void> {
    const found = this.target.lookup(op.key);
    const deps = this.newDeps();
    try {
      const out = await resolveOperation(deps, newRequest(deps), {
        tenant: op.tenant,
        principal: 'operator-1',
        operationId: op.operationId,
        outcome: found.applied ? 'applied' : 'not_applied',
        ...(found.applied ? { result: found.value } : {}),
        attempt: record.attempt,
      });
      callerCoverage.resolutions += 1;
      this.answer(op, out.record, 'resolve');
    } catch (error) {
      this.expect(error, `resolve ${op.key}`);
    }
  }

  /** Every guarantee, checked after the final drive. Empty: the schedule kept them all. */
  async violations(rounds: number | undefined): Promise<string[]> {
    const found = [...this.anomalies];
    if (rounds === undefined) found.push('the world did not quiesce');
    else callerCoverage.maxRounds = Math.max(callerCoverage.maxRounds, rounds);
    for (const op of this.ops) {
      const record = await this.store.get(operationKey(op.tenant, op.operationId));
      const effects = this.target.applied.get(op.key) ?? [];
      if (effects.length > 1) found.push(`${op.key}: the effect ran ${effects.length} times`);
      const keys = this.target.keys.get(op.key) ?? new Set();
      if (keys.size > 1) found.push(`${op.key}: its attempts sent ${keys.size} downstream keys`);
      if (!record) {
        found.push(`${op.key}: no record`);
        continue;
      }
      callerCoverage.finals[record.state] = (callerCoverage.finals[record.state] ?? 0) + 1;
      if (record.tenant !== op.tenant || record.arguments_digest !== op.digest)
        found.push(`${op.key}: the record is another tenant's or holds other arguments`);
      if (!isTerminal(record.state) && !(record.state === 'needs_reconciliation' && hasOperator(op.spec)))
        found.push(`${op.key}: ended ${record.state} at attempt ${record.attempt}`);
      if (record.attempt > record.max_attempts) found.push(`${op.key}: attempt ${record.attempt} > max`);
      if (record.state === 'succeeded') {
        if (effects.length !== 1) found.push(`${op.key}: succeeded with ${effects.length} effects`);
        else if (record.result !== JSON.stringify(effects[0]))
          found.push(`${op.key}: the stored result is not what the effect returned`);
      }
      if ((record.state === 'failed_terminal' || record.state === 'rejected') && effects.length > 0)
        found.push(`${op.key}: ${record.state}, but the effect ran`);
      for (const a of this.answers.filter((x) => x.op === op)) {
        if (a.record.tenant !== op.tenant || a.record.operation_id !== op.operationId)
          found.push(`${op.key}: a ${a.via} answer carried another operation's record`);
        if (
          isTerminal(a.record.state) &&
          (a.record.state !== record.state || a.record.result !== record.result)
        )
          found.push(`${op.key}: a ${a.via} answer (${a.record.state}) differs from the stored outcome`);
      }
    }
    found.push(...replaySchedule(this.logs, (line) => `${line.tenant}#${line.operation_id}`));
    return found;
  }

  async dispose(): Promise<void> {
    await this.admin.send(new DeleteTableCommand({ TableName: this.table })).catch(() => undefined);
  }
}

/** Runs one schedule end to end; throws one error listing every violation. */
export async function runCallerSchedule(
  admin: DynamoDBClient,
  schedule: CallerSchedule,
  options: CallerWorldOptions = {},
): Promise<void> {
  const world = await CallerWorld.create(admin, schedule, options);
  try {
    for (const step of schedule.steps) await world.run(step);
    const rounds = await world.quiesce();
    callerCoverage.schedules += 1;
    callerCoverage.operations += world.ops.length;
    const found = await world.violations(rounds);
    if (found.length > 0) throw new Error(`invariants violated:\n- ${found.join('\n- ')}`);
  } finally {
    await world.dispose();
  }
}
