import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';
import { type LedgerConfig, loadConfig } from '../../functions/config';
import {
  type AnyTool,
  defineTool,
  NotAppliedError,
  TerminalToolError,
  UncertainOutcomeError,
} from '../../functions/domain/tool';
import {
  createDeps,
  type LedgerDeps,
  newRequest,
  type RequestContext,
} from '../../functions/engine/ledger-deps';
import { type SubmitRequest, submitOperation } from '../../functions/engine/submit-operation';
import type { WorkMessage, WorkQueue } from '../../functions/engine/work-queue';
import { LedgerStore } from '../../functions/ledger/ledger-store';
import { MemoryLedgerMetrics } from '../../functions/observability/metrics';
import type { TransitionLogLine } from '../../functions/observability/transition-log';
import { ToolRegistry } from '../../functions/tools/registry';

/**
 * A latch a scripted attempt waits on, so that a test, not the clock, decides when a running effect
 * finishes: "while the first call is in flight" then holds however busy the machine is.
 *
 * @example
 * ```ts
 * const gate = new Gate();
 * tool.next({ kind: 'succeed', gate });
 * const first = ledger.submit(...);
 * await tool.started(1); // the attempt is running and stays so
 * // ... act while it runs ...
 * gate.open();
 * await first;
 * ```
 */
export class Gate {
  private release: () => void = () => {};
  /** Resolves once {@link Gate.open} is called. */
  readonly opened = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  open(): void {
    this.release();
  }
}

/** What the scripted test tool does on its next call(s). */
export type Behaviour =
  /** `gate`: the attempt runs until the gate opens (or its signal aborts), then applies. */
  | { kind: 'succeed'; result?: unknown; delayMs?: number; gate?: Gate }
  | { kind: 'terminal'; code: string; status?: number }
  | { kind: 'not_applied'; code: string }
  /** `applied: false`: the outcome is lost but nothing happened (a reconcile finds no effect). */
  | { kind: 'uncertain'; code: string; applied?: boolean }
  | { kind: 'throw' }
  | { kind: 'hang' }
  | { kind: 'apply_then_hang' };

/**
 * A tool with a real, countable effect: every execute that "applies" appends to `effects`, keyed by
 * operation ID. Its behaviour is scripted per call.
 */
export class ScriptedTool {
  readonly effects: { operationId: string; attempt: number; args: unknown }[] = [];
  readonly starts: { operationId: string; attempt: number }[] = [];
  private script: Behaviour[] = [];
  private readonly startWaiters: { count: number; resolve: () => void }[] = [];
  defaultBehaviour: Behaviour = { kind: 'succeed' };
  reconcileVerdict: 'applied' | 'not_applied' | 'unknown' | undefined = undefined;
  readonly tool: AnyTool;

  constructor(name = 'test.effect', options: Partial<AnyTool> = {}) {
    this.tool = defineTool({
      name,
      description: 'a scripted effect for tests',
      effect: 'write',
      targetClass: 'test',
      schema: z.object({ target: z.string(), value: z.unknown().optional() }).strict(),
      execute: async (args, ctx) => {
        this.starts.push({ operationId: ctx.operationId, attempt: ctx.attempt });
        const b = this.script.shift() ?? this.defaultBehaviour;
        this.notifyStarts();
        const apply = () => this.effects.push({ operationId: ctx.operationId, attempt: ctx.attempt, args });
        switch (b.kind) {
          case 'succeed':
            if (b.delayMs) await sleep(b.delayMs, ctx.signal);
            if (b.gate) await untilOpen(b.gate, ctx.signal);
            apply();
            return b.result ?? { ok: true, target: args.target, attempt: ctx.attempt };
          case 'terminal':
            throw new TerminalToolError(
              b.code,
              'the target refused the call',
              b.status === undefined ? {} : { status: b.status },
            );
          case 'not_applied':
            throw new NotAppliedError(b.code, 'nothing was sent');
          case 'uncertain':
            if (b.applied !== false) apply();
            throw new UncertainOutcomeError(b.code, 'the response was lost');
          case 'throw':
            throw new Error(`secret ${JSON.stringify(args)}`);
          case 'hang':
            return new Promise(() => {});
          case 'apply_then_hang':
            apply();
            return new Promise(() => {});
        }
      },
      reconcile: async (_args, ctx) => {
        const verdict = this.reconcileVerdict;
        if (verdict === 'applied') {
          return {
            status: 'applied',
            result: { reconciled: true, effects: this.effectsOf(ctx.operationId) },
          };
        }
        if (verdict === 'not_applied') return { status: 'not_applied' };
        if (verdict === undefined) {
          return this.effectsOf(ctx.operationId) > 0
            ? { status: 'applied', result: { reconciled: true } }
            : { status: 'not_applied' };
        }
        return { status: 'unknown' };
      },
      ...options,
    });
  }

  /** Queue behaviours for the next calls. */
  next(...behaviours: Behaviour[]): this {
    this.script.push(...behaviours);
    return this;
  }

  effectsOf(operationId: string): number {
    return this.effects.filter((e) => e.operationId === operationId).length;
  }

  /** Resolves once `count` attempts have started (at once if they already have): an event to wait on. */
  started(count: number): Promise<void> {
    if (this.starts.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.startWaiters.push({ count, resolve }));
  }

  private notifyStarts(): void {
    for (const waiter of [...this.startWaiters]) {
      if (this.starts.length < waiter.count) continue;
      this.startWaiters.splice(this.startWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}

function untilOpen(gate: Gate, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    void gate.opened.then(resolve);
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });
}

/** A work queue that keeps messages in memory (queue behaviour itself is tested on fauxqs). */
export class MemoryQueue implements WorkQueue {
  readonly messages: WorkMessage[] = [];
  async enqueue(message: WorkMessage): Promise<void> {
    this.messages.push(message);
  }
}

/** A ledger wired to dynalite with collecting sinks and a controllable clock. */
export interface TestLedger {
  deps: LedgerDeps;
  store: LedgerStore;
  metrics: MemoryLedgerMetrics;
  logs: TransitionLogLine[];
  queue: MemoryQueue;
  /** Moves the test clock (starts at real time). */
  advance(ms: number): void;
  submit(
    request: Partial<SubmitRequest> & { operationId: unknown; arguments: unknown },
    req?: RequestContext,
  ): ReturnType<typeof submitOperation>;
  req(): RequestContext;
}

/** Builds a test ledger on a table. */
export function testLedger(
  client: DynamoDBClient,
  tableName: string,
  tools: AnyTool[],
  config: Partial<LedgerConfig> = {},
): TestLedger {
  let offset = 0;
  const store = new LedgerStore({ client, tableName });
  const metrics = new MemoryLedgerMetrics();
  const logs: TransitionLogLine[] = [];
  const queue = new MemoryQueue();
  const deps = createDeps({
    store,
    tools: new ToolRegistry(tools),
    config: { ...loadConfig({}), tableName, ...config },
    queue,
    metrics,
    log: (line) => logs.push(line),
    clock: () => Date.now() + offset,
  });
  return {
    deps,
    store,
    metrics,
    logs,
    queue,
    advance(ms) {
      offset += ms;
    },
    req: () => newRequest(deps),
    submit(request, req) {
      return submitOperation(deps, req ?? newRequest(deps), {
        tenant: 'acme',
        principal: 'agent-1',
        tool: tools[0]?.name,
        mode: 'sync',
        ...request,
      });
    },
  };
}

/**
 * Drives a ledger to quiescence the way production does: reconciler passes, then the executor
 * handling every queued message (as SQS would deliver them), with the clock moved forward between
 * rounds so that leases and backoffs expire. Returns the number of rounds used.
 */
export async function drive(
  ledger: TestLedger,
  options: { rounds?: number; stepMs?: number } = {},
): Promise<number> {
  const { reconcilePass } = await import('../../functions/engine/reconcile');
  const { handleWorkMessage } = await import('../../functions/queue/handle-work-message');
  const rounds = options.rounds ?? 12;
  for (let round = 1; round <= rounds; round++) {
    ledger.advance(options.stepMs ?? 120_000);
    await reconcilePass(ledger.deps, ledger.req());
    const messages = ledger.queue.messages.splice(0);
    for (const message of messages) {
      await handleWorkMessage(ledger.deps, ledger.req(), JSON.stringify(message), new Set([message.tenant]));
    }
    if (messages.length === 0 && ledger.queue.messages.length === 0 && !(await anyAttention(ledger)))
      return round;
  }
  return rounds;
}

/** True while any record is in the attention index, due or not. */
async function anyAttention(ledger: TestLedger): Promise<boolean> {
  const { allShards } = await import('../../functions/contract/keys');
  for (const shard of allShards(ledger.deps.config.attentionShards)) {
    const page = await ledger.store.queryAttention(shard, Number.MAX_SAFE_INTEGER, 1);
    if (page.items.length > 0) return true;
  }
  return false;
}
