import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { bearerToken, type Operation, ToolLedgerClient } from '../../client/index';
import { SETTINGS } from '../../functions/contract/environment';
import { type LocalStackProcess, startLocalStack } from '../local-stack';
import { type AgentExit, startAgentProcess } from './agent-process';
import { type AgentEvent, type CallerAgentConfig, CHARGE, CHARGE_OPERATION_ID } from './caller-agent';
import { type ChargeTarget, startChargeTarget } from './charge-target';
import type { DemoScene, SceneContext, SceneReport } from './scene';

/**
 * The caller-executed scene: an agent whose tool (charge a customer) runs in the agent's own process
 * and calls a payments API that has no idempotency keys. The agent process is killed with `kill -9`
 * after the charge was applied and before the agent heard back, so nothing was recorded; then the
 * agent is started again and runs the unfinished step again, as frameworks do after a crash.
 *
 * - With tool-ledger (`ledger.run` against local mode): the restarted agent finds the dead process's
 *   claim still live and waits; the lease runs out, the reconciler marks the operation `uncertain`; the
 *   agent's `reconcile` finds the charge by the downstream key it was sent with, and records it as
 *   applied. The tool's code does not run again: one charge.
 * - Without: the restarted agent cannot know the charge went through, and charges again: two.
 */

/** Local mode for the scene: a fast reconciler, so the expired lease is noticed within a second. */
const SCENE_ENV = {
  [SETTINGS.reconcileEveryMs.name]: '250',
  [SETTINGS.retryBaseMs.name]: '200',
};

/** The claim's lease: short, so the dead process's claim runs out in seconds. */
const LEASE_SECONDS = 2;

const TOKEN = 'dev-token';

/** What one side of the scene measured. */
export interface CallerSide {
  /** Agent processes started (the one killed and its restart). */
  processes: number;
  /** How the first process ended (`SIGKILL` when the crash happened). */
  crashed: AgentExit;
  /** Times the tool's code started the effect, in both processes. */
  executions: number;
  /** Charges the target applied. */
  charges: number;
  /** What the restarted agent's step came to. */
  finished: Extract<AgentEvent, { event: 'finished' }>;
  /** The restarted agent's `reconcile` calls, and what each found. */
  reconciles: Extract<AgentEvent, { event: 'reconcile' }>[];
}

/** The ledger side, with what the ledger recorded. */
export interface CallerLedgerSide extends CallerSide {
  /** The operation as the ledger shows it at the end. */
  operation: Operation;
  /** The operation's states in order, from local mode's transition lines. */
  states: string[];
}

/**
 * The scene's ledger side: local mode, the agent through `ledger.run`, the crash, the restart.
 *
 * @example
 * ```ts
 * const side = await callerWithLedger({ root, say });
 * side.charges; // 1
 * ```
 */
export async function callerWithLedger(context: SceneContext): Promise<CallerLedgerSide> {
  const say = (line: string) => context.say('caller/tool-ledger', line);
  const dir = join(context.root, 'caller-ledger');
  await mkdir(dir, { recursive: true });
  const target = await startChargeTarget();
  let stack: LocalStackProcess | undefined;
  try {
    stack = await startLocalStack({ dataDir: join(dir, 'data'), env: SCENE_ENV });
    say(`local mode ready; payments API ${target.origin} (no idempotency keys)`);
    const config: CallerAgentConfig = {
      mode: 'ledger',
      target: target.origin,
      checkpointFile: join(dir, 'checkpoint.json'),
      api: stack.api,
      token: TOKEN,
      leaseSeconds: LEASE_SECONDS,
    };
    const played = await crashThenRestart(config, target, say);
    const client = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken(TOKEN) });
    const operation = await client.get(CHARGE_OPERATION_ID);
    await stack.stop();
    const states = statesOf(stack.stdoutLines(), CHARGE_OPERATION_ID);
    say(`the ledger's record: ${states.join(' → ')}${operation.reconciled ? ' (reconciled)' : ''}`);
    return { ...played, charges: target.charges.length, operation, states };
  } finally {
    await stack?.kill();
    await target.close();
  }
}

/**
 * The scene's bypass side: the same agent calling the payments API itself, the same crash and restart.
 *
 * @example
 * ```ts
 * const side = await callerWithoutLedger({ root, say });
 * side.charges; // 2
 * ```
 */
export async function callerWithoutLedger(context: SceneContext): Promise<CallerSide> {
  const say = (line: string) => context.say('caller/bypass', line);
  const dir = join(context.root, 'caller-bypass');
  await mkdir(dir, { recursive: true });
  const target = await startChargeTarget();
  try {
    const config: CallerAgentConfig = {
      mode: 'naive',
      target: target.origin,
      checkpointFile: join(dir, 'checkpoint.json'),
    };
    const played = await crashThenRestart(config, target, say);
    return { ...played, charges: target.charges.length };
  } finally {
    await target.close();
  }
}

/**
 * The fault: the first agent process is killed once its charge is applied and while it waits for the
 * answer (the target holds it), between the effect and anything the agent could record; a second
 * process is then started on the same run and runs until it exits.
 */
async function crashThenRestart(
  config: CallerAgentConfig,
  target: ChargeTarget,
  say: (line: string) => void,
): Promise<Omit<CallerSide, 'charges'>> {
  target.holdNextAnswer();
  const firstNarrator = narrator(say);
  const first = startAgentProcess(config, firstNarrator.event);
  say(`agent process ${first.pid} started`);
  await first.waitForEvent((e) => e.event === 'execute');
  await target.waitForCharges(1);
  firstNarrator.flush();
  say(`agent process ${first.pid}: the charge is applied, its answer not yet back: kill -9`);
  const crashed = await first.kill();
  const secondNarrator = narrator(say);
  const second = startAgentProcess(config, secondNarrator.event);
  say(`agent process ${second.pid} started on the same run; the step was not saved, so it runs it again`);
  const exit = await second.exited;
  secondNarrator.flush();
  if (exit.code !== 0) {
    throw new Error(`the restarted agent failed (${exit.code ?? exit.signal}):\n${second.stderr()}`);
  }
  const finished = second.events.find((e) => e.event === 'finished');
  if (finished?.event !== 'finished') throw new Error('the restarted agent did not finish its step');
  const executions = [first, second].reduce(
    (sum, agent) => sum + agent.events.filter((e) => e.event === 'execute').length,
    0,
  );
  return {
    processes: 2,
    crashed,
    executions,
    finished,
    reconciles: second.events.filter((e) => e.event === 'reconcile'),
  };
}

/**
 * Tells people what an agent does as it does it: its requests to the ledger (the polls of a wait
 * counted into one line), its tool, its reconcile, how its step ended.
 */
function narrator(say: (line: string) => void): { event(e: AgentEvent): void; flush(): void } {
  let polls = 0;
  const flush = () => {
    if (polls > 0) say(`  ${polls} × GET the operation: waiting for its state to move`);
    polls = 0;
  };
  return {
    flush,
    event(e) {
      if (e.event === 'http' && e.method === 'GET') {
        polls++;
        return;
      }
      flush();
      switch (e.event) {
        case 'http':
          say(`  ${e.method} ${routeOf(e.path)} → ${e.status}${e.state ? ` ${e.state}` : ''}${meaning(e)}`);
          return;
        case 'execute':
          say(
            `  the tool's code runs${e.attempt === undefined ? '' : ` (attempt ${e.attempt})`}: ` +
              `POST /charges ${CHARGE.customer} ${CHARGE.cents}`,
          );
          return;
        case 'reconcile':
          say(
            `  reconcile: GET /charges?reference=<downstream key> → ${e.found ? 'found: applied' : 'none: not applied'}`,
          );
          return;
        case 'finished':
          say(
            `  step done: ${e.outcome}; ${e.executions === 0 ? 'the tool did not run in this process' : `the tool ran ${e.executions}× in this process`}` +
              `${e.reconciled ? '; the outcome recovered by reconcile' : ''}`,
          );
          return;
        default:
          return;
      }
    },
  };
}

function routeOf(path: string): string {
  return path.replace(/\/v1\/operations\/[^/]+/, '/v1/operations/{id}');
}

/** What an answer of the ledger means in this scene, for people. */
function meaning(e: Extract<AgentEvent, { event: 'http' }>): string {
  const route = routeOf(e.path);
  if (route === '/v1/operations' && e.status === 200) return ' (claimed)';
  if (route === '/v1/operations' && e.status === 409) return " (the dead process's claim is still live)";
  if (route === '/v1/operations' && e.status === 202 && e.state === 'pending') {
    return " (the dead process's lease has run out; the reconciler has not looked yet)";
  }
  if (route === '/v1/operations' && e.state === 'uncertain') {
    return ' (its lease ran out; the reconciler marked it)';
  }
  if (route.endsWith('/lease')) return ' (heartbeat)';
  return '';
}

/** The operation's states in order, read from local mode's transition lines (the contract's log, §9). */
export function statesOf(lines: readonly string[], operationId: string): string[] {
  const states: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('{') || !line.includes('"operation transition"')) continue;
    const entry = JSON.parse(line) as { operation_id?: string; state_after?: string };
    if (entry.operation_id !== operationId || entry.state_after === undefined) continue;
    if (states.at(-1) !== entry.state_after) states.push(entry.state_after);
  }
  return states;
}

/** Why the ledger side is wrong, if it is. */
export function callerProblems(side: CallerLedgerSide): string[] {
  const problems: string[] = [];
  if (side.crashed.signal !== 'SIGKILL') problems.push('the first agent process was not killed');
  if (side.charges !== 1) problems.push(`${side.charges} charges for one intended charge`);
  if (side.executions !== 1) problems.push(`the tool's code ran ${side.executions} times`);
  if (side.finished.executions !== 0) problems.push('the restarted agent ran the tool again');
  if (side.operation.state !== 'succeeded') problems.push(`the operation ended ${side.operation.state}`);
  if (side.operation.reconciled !== true) problems.push('the outcome was not recovered by reconcile');
  if (!side.states.includes('uncertain'))
    problems.push('the reconciler never marked the operation uncertain');
  return problems;
}

/** Both sides as text, side by side. */
export function renderCallerComparison(ledger: CallerLedgerSide, naive: CallerSide): string {
  const rows: [string, string, string][] = [
    ['charges intended', '1', '1'],
    ['agent processes started', String(ledger.processes), String(naive.processes)],
    [
      'killed (kill -9) between charge and record',
      ledger.crashed.signal === 'SIGKILL' ? '1' : '0',
      naive.crashed.signal === 'SIGKILL' ? '1' : '0',
    ],
    ["times the tool's code ran", String(ledger.executions), String(naive.executions)],
    ['charges applied at the target', String(ledger.charges), String(naive.charges)],
    ['duplicate effects', String(Math.max(0, ledger.charges - 1)), String(Math.max(0, naive.charges - 1))],
    [
      "outcome recovered by the caller's reconcile",
      ledger.reconciles.some((r) => r.found) && ledger.operation.reconciled ? 'yes' : 'no',
      '-',
    ],
  ];
  const head: [string, string, string] = ['', 'with tool-ledger', 'without (bypass)'];
  const widths = [0, 1, 2].map((i) => Math.max(...[head, ...rows].map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ');
  const record = `${ledger.states.join(' → ')}${ledger.operation.reconciled ? ' (reconciled)' : ''}`;
  return [line(head), ...rows.map(line), '', `tool-ledger's record of the charge: ${record}`].join('\n');
}

async function run(context: SceneContext): Promise<SceneReport> {
  const ledger = await callerWithLedger(context);
  const naive = await callerWithoutLedger(context);
  return {
    table: renderCallerComparison(ledger, naive),
    summary:
      `caller-executed tool killed between effect and record: with tool-ledger ${ledger.charges} charge ` +
      `(recovered by reconcile); without: ${naive.charges} charges`,
    problems: callerProblems(ledger),
  };
}

/** The scene, for the demo's list. */
export const callerScene: DemoScene = {
  name: 'a tool in the agent’s own process (ledger.run), the agent killed between effect and record',
  run,
};
