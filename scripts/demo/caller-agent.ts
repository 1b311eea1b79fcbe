import { readFile, writeFile } from 'node:fs/promises';
import { bearerToken, operationIdFor, type ReconcileVerdict, ToolLedgerClient } from '../../client/index';
import type { Charge } from './charge-target';

/**
 * The agent of the caller-executed scene: its one tool (charge a customer) lives in its own process, as
 * a framework's `tool({ execute })` does, and calls the payments target itself. The orchestrator saves
 * a step once the tool has returned (a checkpoint file); a process that dies before that runs the step
 * again when it is started again, which is what every agent framework does after a crash.
 *
 * - `ledger`: the tool runs through `ledger.run`, with the operation ID of its position in the run, the
 *   downstream key as the charge's reference, and a `reconcile` that looks the charge up by it.
 * - `naive`: the tool calls the target directly.
 *
 * Everything the agent does is reported as {@link AgentEvent}s, so the scene watches it happen.
 */

/** What the scene hands one agent process. */
export interface CallerAgentConfig {
  mode: 'ledger' | 'naive';
  /** The charge target's origin. */
  target: string;
  /** Where the orchestrator saves the steps it finished. */
  checkpointFile: string;
  /** `ledger` mode: the API. */
  api?: string;
  /** `ledger` mode: the bearer token. */
  token?: string;
  /** `ledger` mode: how long a claim holds without a heartbeat, seconds. */
  leaseSeconds?: number;
}

/** What an agent reports, one JSON line each. */
export type AgentEvent =
  | { event: 'step'; operationId: string; resumed: boolean }
  /** The tool's code starts the effect (`attempt`: the ledger's claim, with the ledger). */
  | { event: 'execute'; attempt?: number }
  /** The tool's effect answered. */
  | { event: 'effect_answered'; chargeId: string }
  /** The caller's `reconcile` looked the charge up by the downstream key. */
  | { event: 'reconcile'; attempt: number; found: boolean }
  /** A request to the ledger and its answer (`error` when none came). */
  | { event: 'http'; method: string; path: string; status: number | 'error'; state?: string }
  | {
      event: 'finished';
      outcome: string;
      state: string;
      replayed: boolean;
      /** How many times this process ran the tool's code. */
      executions: number;
      reconciled: boolean;
      result: unknown;
    };

/** The charge the agent intends, once. */
export const CHARGE = { customer: 'cus_42', cents: 500 } as const;

/** The tool's name as the ledger records it (a caller tool: the deployment does not run it). */
export const CHARGE_TOOL = 'payments.charge';

/** The step's operation ID: its position in the run, the same in every process that runs it. */
export const CHARGE_OPERATION_ID = operationIdFor({ agentRunId: 'demo-caller-run', step: 1, callIndex: 0 });

/**
 * Runs the agent's one step unless the checkpoint says it is done.
 *
 * @example
 * ```ts
 * await runCallerAgent(config, (event) => process.stdout.write(`${JSON.stringify(event)}\n`));
 * ```
 */
export async function runCallerAgent(
  config: CallerAgentConfig,
  emit: (event: AgentEvent) => void,
): Promise<void> {
  const checkpoint = await readCheckpoint(config.checkpointFile);
  if (checkpoint.done.includes(CHARGE_OPERATION_ID)) return;
  emit({ event: 'step', operationId: CHARGE_OPERATION_ID, resumed: checkpoint.started });
  await writeFile(config.checkpointFile, JSON.stringify({ ...checkpoint, started: true }));
  if (config.mode === 'naive') {
    emit({ event: 'execute' });
    const charge = await postCharge(config.target, undefined, undefined);
    emit({ event: 'effect_answered', chargeId: charge.id });
    emit({
      event: 'finished',
      outcome: 'succeeded',
      state: 'succeeded',
      replayed: false,
      executions: 1,
      reconciled: false,
      result: { charge_id: charge.id },
    });
  } else {
    const ledger = new ToolLedgerClient({
      endpoint: required(config.api, 'api'),
      signer: bearerToken(required(config.token, 'token')),
      fetch: tracingFetch(emit),
      pollBackoff: { baseMs: 100, maxMs: 400 },
      deadlineMs: 45_000,
    });
    const out = await ledger.run({
      operationId: CHARGE_OPERATION_ID,
      tool: CHARGE_TOOL,
      arguments: CHARGE,
      leaseSeconds: config.leaseSeconds,
      execute: async (ctx) => {
        emit({ event: 'execute', attempt: ctx.attempt });
        const charge = await postCharge(config.target, ctx.downstreamKey, ctx.signal);
        emit({ event: 'effect_answered', chargeId: charge.id });
        return { charge_id: charge.id };
      },
      reconcile: async (ctx): Promise<ReconcileVerdict<{ charge_id: string }>> => {
        const found = await findCharge(config.target, ctx.downstreamKey, ctx.signal);
        emit({ event: 'reconcile', attempt: ctx.attempt, found: found !== undefined });
        return found ? { status: 'applied', result: { charge_id: found.id } } : { status: 'not_applied' };
      },
      // A claim held by a dead process, an uncertain outcome: wait until the ledger moves on.
      wait: { timeoutMs: 40_000 },
    });
    emit({
      event: 'finished',
      outcome: out.outcome,
      state: out.operation.state,
      replayed: out.replayed,
      executions: out.executions,
      reconciled: out.operation.reconciled === true,
      result: out.result,
    });
  }
  await writeFile(
    config.checkpointFile,
    JSON.stringify({ started: true, done: [...checkpoint.done, CHARGE_OPERATION_ID] }),
  );
}

async function readCheckpoint(file: string): Promise<{ started: boolean; done: string[] }> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as { started: boolean; done: string[] };
  } catch {
    return { started: false, done: [] };
  }
}

function required(value: string | undefined, name: string): string {
  if (value === undefined) throw new Error(`ledger mode needs ${name}`);
  return value;
}

async function postCharge(
  target: string,
  reference: string | undefined,
  signal: AbortSignal | undefined,
): Promise<Charge> {
  const response = await fetch(`${target}/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...CHARGE, reference }),
    signal,
  });
  if (!response.ok) throw new Error(`the payments API answered ${response.status}`);
  return (await response.json()) as Charge;
}

async function findCharge(
  target: string,
  reference: string,
  signal: AbortSignal,
): Promise<Charge | undefined> {
  const response = await fetch(`${target}/charges?reference=${encodeURIComponent(reference)}`, { signal });
  if (!response.ok) throw new Error(`the payments API answered ${response.status}`);
  const { data } = (await response.json()) as { data: Charge[] };
  return data[0];
}

/** `fetch` that reports each request to the ledger and its answer (the state, never a body's values). */
function tracingFetch(emit: (event: AgentEvent) => void): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? 'GET';
    try {
      const response = await fetch(input, init);
      const body = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { state?: unknown; operation?: { state?: unknown } } | undefined;
      const state = body?.state ?? body?.operation?.state;
      emit({
        event: 'http',
        method,
        path: url.pathname,
        status: response.status,
        ...(typeof state === 'string' ? { state } : {}),
      });
      return response;
    } catch (error) {
      emit({ event: 'http', method, path: url.pathname, status: 'error' });
      throw error;
    }
  };
}
