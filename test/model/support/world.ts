import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type LedgerConfig, loadConfig } from '../../../functions/config';
import { errorClass, LedgerError } from '../../../functions/domain/errors';
import type { OperationRecord } from '../../../functions/domain/operation';
import { decideApproval } from '../../../functions/engine/approval';
import { createDeps, type LedgerDeps, newRequest } from '../../../functions/engine/ledger-deps';
import { getOperation } from '../../../functions/engine/read-operations';
import { reconcilePass } from '../../../functions/engine/reconcile';
import { resolveOperation } from '../../../functions/engine/resolution';
import { submitOperation } from '../../../functions/engine/submit-operation';
import { TerminalCache } from '../../../functions/engine/terminal-cache';
import type { WorkMessage, WorkQueue } from '../../../functions/engine/work-queue';
import { LedgerStore } from '../../../functions/ledger/ledger-store';
import { ensureLedgerTable } from '../../../functions/ledger/table';
import { type LedgerMetrics, MemoryLedgerMetrics } from '../../../functions/observability/metrics';
import type { TransitionLogLine, TransitionSink } from '../../../functions/observability/transition-log';
import { handleWorkMessage, type WorkVerdict } from '../../../functions/queue/handle-work-message';
import type { ToolRegistry } from '../../../functions/tools/registry';
import { tenantFolder } from '../../../functions/tools/workspace-path';
import { buildCatalogue, CANARY_PREFIX, type ModelOp, TENANTS } from './catalogue';
import type { HookServer } from './hook-server';
import type { ScriptedTools } from './model-tools';
import { faultStats, ProcessLink, StepFaults, stepFaults } from './process-faults';
import type { FaultSpec, Group, Schedule, Step } from './schedule';
import { buildToolbox } from './toolbox';
import { traceSink } from './trace-file';

/** What every schedule of a suite shares: one dynalite server and the webhook targets. */
export interface SharedEnv {
  /** dynalite endpoint. */
  endpoint: string;
  /** A client without faults, for tables and final reads. */
  admin: DynamoDBClient;
  plainHook: HookServer;
  idemHook: HookServer;
  deadOrigin: string;
}

/** Extra wiring for a world (the canary test sends lines through the real logger too). */
export interface WorldOptions {
  log?: TransitionSink;
  metrics?: () => LedgerMetrics;
  /**
   * Called with every new process (`slot`: the schedule slot it serves; undefined for the final
   * drive's processes), e.g. to give it its own deployment of the tools (`policy-model.test.ts`).
   */
  onProcess?: (proc: ModelProcess, slot: number | undefined) => void;
}

/** A response an actor got that carried a record, kept for the replay and isolation invariants. */
export interface Seen {
  op: number;
  via: 'submit' | 'approve' | 'resolve' | 'final-warm' | 'final-cold';
  kind: string;
  replayed: boolean | undefined;
  record: OperationRecord;
}

/** The clock starts here (virtual: it moves only when the schedule says so). */
const START = Date.UTC(2031, 0, 1);

/** Every principal of the model. */
export const PRINCIPALS = { agent: 'agent-1', approver: 'human-1', operator: 'operator-1' } as const;

let tableCounter = 0;

/** A simulated worker process: its own DynamoDB connection (with faults), cache and worker ID. */
export interface ModelProcess {
  link: ProcessLink;
  deps: LedgerDeps;
}

/** How a step ended for the group that ran it. */
export type StepEnd = 'done' | 'crashed' | 'stalled';

/** A step paused by a stall fault, and how to let it go on. */
interface Stall {
  /** Clock advances seen when it stalled: it goes on once the clock has moved since. */
  advances: number;
  proc: ModelProcess;
  release: () => void;
  done: Promise<unknown>;
}

/** The work queue: messages in memory; a step whose faults say so finds it down. */
class ModelQueue implements WorkQueue {
  readonly messages: WorkMessage[] = [];
  async enqueue(message: WorkMessage): Promise<void> {
    if (stepFaults.getStore()?.spec.queueDown) {
      faultStats.queueDown += 1;
      throw new Error('the queue is unavailable');
    }
    this.messages.push(structuredClone(message));
  }
}

/**
 * One schedule's world: a fresh table, a workspace, the tools with their effect logs, worker
 * processes that can crash, a queue, a virtual clock, and everything actors saw.
 */
export class World {
  now = START;
  readonly queue = new ModelQueue();
  readonly inflight = new Set<Promise<unknown>>();
  readonly seen: Seen[] = [];
  /** Retries refused as conflicts (`requestId`: the refused request, whose log lines say which path refused it). */
  readonly conflicts: { op: number; variant: number; requestId?: string }[] = [];
  readonly anomalies: string[] = [];
  readonly logs: TransitionLogLine[] = [];
  /**
   * Writes that moved a record and whose answer never reached their writer, by `pk`: the moves that
   * may be missing from {@link logs} (see `trace-replay.ts`).
   */
  readonly unseenWrites = new Map<string, number>();
  /**
   * Requests the read path answered (the tool was declared a read where they ran): their log lines
   * are a read's, not transitions of a ledger record.
   */
  readonly readRequests = new Set<string>();
  readonly ops: ModelOp[];
  readonly config: LedgerConfig;
  readonly scripted: ScriptedTools;
  readonly registry: ToolRegistry;
  private readonly slots: (ModelProcess | undefined)[] = [];
  private stalls: Stall[] = [];
  private advances = 0;
  private readonly links: ProcessLink[] = [];
  private generation = 0;

  private constructor(
    private readonly env: SharedEnv,
    readonly schedule: Schedule,
    readonly table: string,
    readonly workspaceRoot: string,
    private readonly options: WorldOptions,
  ) {
    const byKey = new Map<string, ModelOp>();
    const box = buildToolbox({
      workspaceRoot,
      idempotentOrigin: env.idemHook.origin,
      inflight: this.inflight,
      byKey,
      anomalies: this.anomalies,
    });
    this.registry = box.registry;
    this.scripted = box.scripted;
    this.config = {
      ...loadConfig({}),
      tableName: table,
      attentionShards: schedule.shards,
      leaseGraceMs: 1_000,
      approvalTtlSeconds: 1_800,
      maxReconcileChecks: 2,
      queuedStaleMs: 60_000,
      retryBaseMs: 2_000,
      syncWaitMs: schedule.syncBudget === 'tight' ? 10 : 25_000,
    };
    const salt = randomBytes(4).toString('hex');
    this.ops = buildCatalogue(
      {
        salt,
        registry: box.registry,
        toolNames: box.toolNames,
        scripted: box.scripted,
        workspaceRoot,
        plainHook: env.plainHook,
        idemHook: env.idemHook,
        deadOrigin: env.deadOrigin,
        returns: box.returns,
      },
      schedule.ops,
    );
    for (const op of this.ops) byKey.set(op.key, op);
    const arrivals = (key: string, n: number) => byKey.get(key)?.spec.arrivals[n - 1] ?? 'ok';
    env.plainHook.reset(arrivals);
    env.idemHook.reset(arrivals);
  }

  /** Builds the world of a schedule on a fresh table and workspace. */
  static async create(env: SharedEnv, schedule: Schedule, options: WorldOptions = {}): Promise<World> {
    tableCounter += 1;
    const table = `model-${process.pid}-${tableCounter}`;
    await ensureLedgerTable(env.admin, table);
    const root = path.join(await realpath(await mkdtemp(path.join(tmpdir(), 'tool-ledger-model-'))), 'ws');
    await mkdir(root, { recursive: true });
    const world = new World(env, schedule, table, root, options);
    for (const op of world.ops) {
      if (op.spec.kind !== 'workspace.delete_file') continue;
      for (const args of op.args) {
        const file = path.join(root, tenantFolder(op.tenant), String(args.path));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `${CANARY_PREFIX}-doomed\n`);
      }
    }
    return world;
  }

  /** A fresh process (new connection, empty cache), optionally in a schedule slot. */
  newProcess(maxAttempts = 3, slot?: number): ModelProcess {
    this.generation += 1;
    const link = new ProcessLink(this.env.endpoint, maxAttempts, (pk) => {
      this.unseenWrites.set(pk, (this.unseenWrites.get(pk) ?? 0) + 1);
    });
    this.links.push(link);
    const metrics = this.options.metrics?.() ?? new MemoryLedgerMetrics();
    const extra = this.options.log;
    const trace = traceSink(this.table, (line) => this.tenantOf(line));
    const deps = createDeps({
      store: new LedgerStore({ client: link.client, tableName: this.table }),
      tools: this.registry,
      config: this.config,
      queue: this.queue,
      clock: () => this.now,
      log: (line) => {
        this.logs.push(line);
        extra?.(line);
        trace?.(line);
      },
      metrics,
      workerId: `p${this.generation}`,
      cache: new TerminalCache(100),
    });
    const proc = { link, deps };
    this.options.onProcess?.(proc, slot);
    return proc;
  }

  /** The record a line is about (`tenant#operation_id`, its `pk`): tenants share operation IDs. */
  keyOf(line: TransitionLogLine): string {
    return `${this.tenantOf(line)}#${line.operation_id}`;
  }

  /** The tenant of a logged operation: the one whose arguments have the line's digest. */
  tenantOf(line: TransitionLogLine): string {
    const op = this.ops.find(
      (o) => o.operationId === line.operation_id && o.variantOf(line.arguments_digest) !== undefined,
    );
    return op?.tenant ?? 'unknown';
  }

  /** The live process of a slot, restarting it if it crashed. */
  process(slot: number): ModelProcess {
    const index = slot % this.schedule.processes.length;
    const current = this.slots[index];
    if (current?.link.isAlive) return current;
    const next = this.newProcess(this.schedule.processes[index] ?? 3, index);
    this.slots[index] = next;
    return next;
  }

  /** The operation a step names. */
  op(ref: number): ModelOp {
    return this.ops[ref % this.ops.length] as ModelOp;
  }

  /** Waits until no tool execution is in flight anywhere (also in crashed processes). */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Runs one group of the schedule. */
  async run(group: Group): Promise<void> {
    if (group.kind === 'advance') {
      await this.settle();
      this.now += group.ms;
      this.advances += 1;
      return;
    }
    await Promise.all(group.steps.map((step) => this.step(step)));
    await this.releaseStalls(false);
  }

  /**
   * Runs `work` as a step of `proc` under `faults`. Returns when the work is done, when its process
   * dies (the work then hangs forever), or when it stalls: the work then goes on in the background
   * once {@link releaseStalls} lets it, and records what it sees itself.
   */
  async within(proc: ModelProcess, faults: FaultSpec, work: () => Promise<void>): Promise<StepEnd> {
    let paused: () => void = () => {};
    const stalled = new Promise<'stalled'>((resolve) => {
      paused = () => resolve('stalled');
    });
    const pause = () =>
      new Promise<void>((release) => {
        this.stalls.push({ advances: this.advances, proc, release, done: running });
        paused();
      });
    const running: Promise<'done'> = stepFaults.run(new StepFaults(faults, pause), work).then(
      () => 'done' as const,
      (error: unknown) => {
        this.expect(error, [], 'step');
        return 'done' as const;
      },
    );
    return Promise.race([running, proc.link.died, stalled]);
  }

  /**
   * Lets stalled steps go on: those that stalled before the clock last moved (`all`: every one), and
   * waits for them to finish (or their process to die).
   */
  async releaseStalls(all: boolean): Promise<void> {
    const due = this.stalls.filter((s) => all || this.advances > s.advances);
    if (due.length === 0) return;
    this.stalls = this.stalls.filter((s) => !due.includes(s));
    for (const s of due) s.release();
    await Promise.all(due.map((s) => Promise.race([s.done, s.proc.link.died])));
  }

  /** Records a response that carried a record. */
  see(op: ModelOp, via: Seen['via'], kind: string, record: OperationRecord, replayed?: boolean): void {
    this.seen.push({ op: op.index, via, kind, record, replayed });
  }

  /** Records an error unless its code is one the step may meet. */
  expect(error: unknown, allowed: readonly string[], what: string): void {
    if (error instanceof LedgerError && allowed.includes(error.code)) return;
    const detail = error instanceof Error ? error.message : String(error);
    this.anomalies.push(`${what}: unexpected ${errorClass(error)} (${detail})`);
  }

  private async step(step: Step): Promise<void> {
    switch (step.kind) {
      case 'submit':
        return this.submit(step);
      case 'deliver':
        return this.deliver(step);
      case 'reconcile':
        return this.reconcile(step);
      case 'approve': {
        const op = this.op(step.op);
        const proc = this.process(step.proc);
        await this.within(proc, {}, () => this.decide(proc, op, step.decision, op.digests[step.variant]));
        return;
      }
      case 'resolve': {
        const proc = this.process(step.proc);
        await this.within(proc, {}, () => this.resolve(proc, this.op(step.op), step.ifNotApplied));
        return;
      }
      case 'lose':
        if (this.queue.messages.length > 0)
          this.queue.messages.splice(step.pick % this.queue.messages.length, 1);
        return;
    }
  }

  private async submit(step: Extract<Step, { kind: 'submit' }>): Promise<void> {
    const op = this.op(step.op);
    const proc = this.process(step.proc);
    await this.within(proc, step.fault, async () => {
      const req = newRequest(proc.deps);
      try {
        const out = await submitOperation(proc.deps, req, {
          tenant: op.tenant,
          principal: PRINCIPALS.agent,
          operationId: op.operationId,
          tool: op.toolName,
          arguments: op.args[step.variant],
          mode: step.mode,
        });
        // A read tool's answer (a deployment declared the tool a read): no ledger record to check.
        if (!('pk' in out.record)) {
          this.readRequests.add(req.requestId);
          return;
        }
        this.see(
          op,
          'submit',
          out.kind,
          out.record as OperationRecord,
          'replayed' in out ? out.replayed : undefined,
        );
      } catch (error) {
        if (error instanceof LedgerError && error.code === 'idempotency_key_reused') {
          this.conflicts.push({ op: op.index, variant: step.variant, requestId: req.requestId });
          return;
        }
        this.expect(error, ['ledger_unavailable'], `submit ${op.key}`);
      }
    });
  }

  /**
   * Delivers one message as SQS would: at least once. `again` (a retry verdict, a crash, a stall past
   * the visibility timeout) means SQS will deliver it again.
   */
  async deliverMessage(
    proc: ModelProcess,
    message: WorkMessage,
    faults: FaultSpec,
  ): Promise<'ack' | 'again'> {
    let verdict: WorkVerdict | undefined;
    const end = await this.within(proc, faults, async () => {
      const out = await handleWorkMessage(
        proc.deps,
        newRequest(proc.deps),
        JSON.stringify(message),
        new Set(TENANTS),
      );
      if (out.action === 'retry' && out.code !== 'failed_retryable' && out.code !== 'ledger_unavailable') {
        this.anomalies.push(`work message ${message.tenant}#${message.operation_id}: retry with ${out.code}`);
      }
      verdict = out;
    });
    return end === 'done' && verdict?.action === 'ack' ? 'ack' : 'again';
  }

  private async deliver(step: Extract<Step, { kind: 'deliver' }>): Promise<void> {
    const queue = this.queue.messages;
    if (queue.length === 0) return;
    const index = step.pick % queue.length;
    const message = step.duplicate ? queue[index] : queue.splice(index, 1)[0];
    if (!message) return;
    const outcome = await this.deliverMessage(this.process(step.proc), message, step.fault);
    if (outcome === 'again' && !step.duplicate) queue.push(message);
  }

  private async reconcile(step: Extract<Step, { kind: 'reconcile' }>): Promise<void> {
    await Promise.all(
      step.procs.map(async (slot, i) => {
        const proc = this.process(slot);
        const faults = i === 0 ? step.fault : {};
        const clean = Object.keys(faults).length === 0;
        await this.within(proc, faults, async () => {
          try {
            const summary = await reconcilePass(proc.deps, newRequest(proc.deps));
            if (clean && (summary.actions.error ?? 0) > 0) {
              this.anomalies.push('a reconciler pass without faults had failing decisions');
            }
          } catch (error) {
            this.expect(error, ['ledger_unavailable'], 'reconcile pass');
          }
        });
      }),
    );
  }

  /** An approver's decision, bound to a digest. */
  async decide(
    proc: ModelProcess,
    op: ModelOp,
    decision: 'approve' | 'reject',
    digest: string,
  ): Promise<void> {
    try {
      const out = await decideApproval(proc.deps, newRequest(proc.deps), {
        tenant: op.tenant,
        principal: PRINCIPALS.approver,
        operationId: op.operationId,
        decision,
        argumentsDigest: digest,
      });
      this.see(op, 'approve', decision, out.record);
    } catch (error) {
      this.expect(error, ['not_found', 'approval_mismatch', 'state_changed'], `approve ${op.key}`);
    }
  }

  /**
   * A truthful operator: resolves an uncertain or needs_reconciliation operation from the world's
   * effect log (applied when the effect happened; `not_applied` or `failed` only when it provably did
   * not), naming the attempt it looked at.
   */
  async resolve(
    proc: ModelProcess,
    op: ModelOp,
    ifNotApplied: 'not_applied' | 'failed',
    known?: OperationRecord,
  ): Promise<void> {
    const req = newRequest(proc.deps);
    let record: OperationRecord;
    try {
      record = known ?? (await getOperation(proc.deps, req, op.tenant, op.operationId));
    } catch (error) {
      this.expect(error, ['not_found'], `read ${op.key}`);
      return;
    }
    if (record.state !== 'uncertain' && record.state !== 'needs_reconciliation') return;
    const variant = op.variantOf(record.arguments_digest);
    if (variant === undefined) return; // reported by the invariants
    const applied = (await op.applied())[variant] > 0;
    try {
      const out = await resolveOperation(proc.deps, req, {
        tenant: op.tenant,
        principal: PRINCIPALS.operator,
        operationId: op.operationId,
        outcome: applied ? 'applied' : ifNotApplied,
        ...(applied ? { result: { ok: true, echo: `${op.canaries[variant]}-res`, resolved: true } } : {}),
        attempt: record.attempt,
      });
      this.see(op, 'resolve', out.record.state, out.record);
    } catch (error) {
      this.expect(error, ['state_changed', 'not_found'], `resolve ${op.key}`);
    }
  }

  /** Deletes the table and the workspace and closes connections. */
  async dispose(): Promise<void> {
    for (const s of this.stalls.splice(0)) s.release();
    await this.settle();
    for (const link of this.links) link.destroy();
    await this.env.admin.send(new DeleteTableCommand({ TableName: this.table })).catch(() => undefined);
    await rm(path.dirname(this.workspaceRoot), { recursive: true, force: true });
  }
}
