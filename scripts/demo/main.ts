import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearerToken, ToolLedgerClient, ToolNameMap } from '../../client/index';
import { ToolLedgerQueueSender } from '../../client/sqs-sender';
import { SETTINGS } from '../../functions/contract/environment';
import { localSqsClient } from '../../functions/local/sqs-server';
import { tenantFolder } from '../../functions/tools/workspace-path';
import { killAllStacks, type LocalStackProcess, startLocalStack } from '../local-stack';
import { startWebhookTarget } from '../webhook-target';
import { callerScene } from './caller-scene';
import { type EffectsReport, observeEffects } from './effects';
import { type LedgerRunResult, operationIdOf, runWithLedger } from './ledger-agent';
import { startLostResponseProxy } from './lost-response-proxy';
import { runWithoutLedger } from './naive-agent';
import type { DemoScene } from './scene';
import { ACTIONS, STEPS } from './script';
import { renderComparison } from './table';

/**
 * `npm run demo`: one scripted agent run (no model needed) played twice against real effects, with
 * the same faults injected: lost responses, a worker killed mid-call, duplicate SQS deliveries, a
 * webhook that hangs past the tool's timeout, and a replayed model turn. First through tool-ledger
 * in local mode (a child process group, restarted after the kill on the same data folder), then with
 * the ledger bypassed. It prints both runs side by side and exits non-zero if the ledger run shows a
 * duplicate or missing effect. Then each scene of {@link SCENES} (one agent, one fault, with and without
 * the ledger) in turn. Loopback only; everything it starts is stopped; bounded in time.
 */

/** The whole demo must end within this, whatever hangs. */
const BOUND_MS = 150_000;

/** Played after the main script, in order; each prints its own table and may fail the demo. */
const SCENES: readonly DemoScene[] = [callerScene];

/** Local mode tuned for a demo: a fast reconciler and short backoffs, so recoveries take seconds. */
const DEMO_ENV = {
  [SETTINGS.reconcileEveryMs.name]: '250',
  [SETTINGS.retryBaseMs.name]: '200',
  [SETTINGS.leaseGraceMs.name]: '500',
};

const started = Date.now();

function say(run: string, line: string): void {
  const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
  process.stdout.write(`${seconds}s  [${run}] ${line}\n`);
}

/** The ledger run's figures, and whether every action took effect exactly once and as intended. */
interface LedgerPhase {
  result: LedgerRunResult;
  effects: EffectsReport;
  attempts: number;
  reconciled: number;
  /** The tool's timeout, for the naive agent's own. */
  webhookTimeoutMs: number;
}

async function ledgerPhase(root: string): Promise<LedgerPhase> {
  const log = (line: string) => say('tool-ledger', line);
  const plain = await startWebhookTarget();
  const idempotent = await startWebhookTarget({ dedupeByKey: true });
  const dataDir = join(root, 'ledger-run');
  const env = { ...DEMO_ENV, [SETTINGS.webhookIdempotent.name]: idempotent.origin };
  const transcript: string[] = [];
  let stack: LocalStackProcess = await startLocalStack({ dataDir, env });
  log(
    `local mode ready (pid group ${stack.pgid}); webhook receivers ${plain.origin}, ${idempotent.origin} (dedupes)`,
  );
  const proxy = await startLostResponseProxy(stack.api);
  const sqsFor = (s: LocalStackProcess) => localSqsClient(s.sqs);
  let sqs = sqsFor(stack);
  try {
    const client = new ToolLedgerClient({
      endpoint: proxy.url,
      signer: bearerToken(stack.tokens.agent),
      deadlineMs: 45_000,
    });
    const tools = await client.tools();
    const result = await runWithLedger({
      client,
      proxy,
      sender: () => new ToolLedgerQueueSender({ queueUrl: stack.queueUrl, tenant: 'local', sqs }),
      names: ToolNameMap.fromTools(tools),
      origins: { plain: plain.origin, idempotent: idempotent.origin },
      targets: { plain, idempotent },
      async crashAndRestart() {
        await stack.kill();
        transcript.push(...stack.stdoutLines());
        sqs.destroy();
        stack = await startLocalStack({ dataDir, env });
        sqs = sqsFor(stack);
        proxy.setUpstream(stack.api);
      },
      say: log,
    });
    await stack.stop();
    transcript.push(...stack.stdoutLines());
    const ids = new Set(ACTIONS.map(operationIdOf));
    return {
      result,
      // The ledger's workspace tools write below the tenant's own root (tenant `local` here).
      effects: await observeEffects(
        join(dataDir, 'workspace', tenantFolder('local')),
        { plain, idempotent },
        ACTIONS,
      ),
      attempts: result.operations.reduce((sum, op) => sum + op.attempt, 0),
      reconciled: reconciledOperations(transcript, ids),
      webhookTimeoutMs: tools.find((t) => t.name === 'webhook.post')?.timeout_ms ?? 10_000,
    };
  } finally {
    await stack.kill();
    sqs.destroy();
    await proxy.close();
    await plain.close();
    await idempotent.close();
  }
}

/**
 * Operations the reconciler decided: those with a transition out of `uncertain` in the transition log
 * (SPEC §9), which both stacks printed on stdout.
 */
function reconciledOperations(lines: readonly string[], ids: ReadonlySet<string>): number {
  const decided = new Set<string>();
  for (const line of lines) {
    if (!line.startsWith('{') || !line.includes('"operation transition"')) continue;
    const entry = JSON.parse(line) as { operation_id?: string; state_before?: string };
    if (entry.state_before === 'uncertain' && entry.operation_id && ids.has(entry.operation_id)) {
      decided.add(entry.operation_id);
    }
  }
  return decided.size;
}

async function naivePhase(
  root: string,
  timeoutMs: number,
): Promise<{ effects: EffectsReport; attempts: number }> {
  const log = (line: string) => say('bypass', line);
  const plain = await startWebhookTarget();
  const idempotent = await startWebhookTarget({ dedupeByKey: true });
  const plainProxy = await startLostResponseProxy(plain.origin);
  const workspaceDir = join(root, 'bypass-run', 'workspace');
  try {
    const { attempts } = await runWithoutLedger({
      workspaceDir,
      origins: { plain: plain.origin, idempotent: idempotent.origin },
      targets: { plain, idempotent },
      plainProxy,
      timeoutMs,
      say: log,
    });
    return { effects: await observeEffects(workspaceDir, { plain, idempotent }, ACTIONS), attempts };
  } finally {
    await plainProxy.close();
    await plain.close();
    await idempotent.close();
  }
}

/** Why the ledger run is wrong, if it is: any action not applied exactly once and as intended. */
function ledgerProblems(phase: LedgerPhase): string[] {
  const problems: string[] = [];
  for (const observed of phase.effects.perAction) {
    const id = operationIdOf(observed.action);
    if (observed.effects !== 1) problems.push(`${id}: ${observed.effects} effects`);
    else if (!observed.intact) problems.push(`${id}: the effect is not what was intended`);
  }
  for (const op of phase.result.operations) {
    if (op.state !== 'succeeded') problems.push(`${op.operation_id}: ended ${op.state}`);
  }
  if (phase.effects.total !== ACTIONS.length) {
    problems.push(`${phase.effects.total} effects for ${ACTIONS.length} actions`);
  }
  return problems;
}

async function main(): Promise<number> {
  process.stdout.write(
    `tool-ledger demo: one scripted agent run, ${ACTIONS.length} actions in ${STEPS.length} steps, ` +
      'with faults injected; first through tool-ledger, then with the ledger bypassed.\n\n',
  );
  const root = await mkdtemp(join(tmpdir(), 'tool-ledger-demo-'));
  // Also on Ctrl-C and the watchdog, after the launcher's own exit hook has killed the stacks.
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  try {
    const ledger = await ledgerPhase(root);
    const naive = await naivePhase(root, ledger.webhookTimeoutMs);
    process.stdout.write(
      `\n${renderComparison(
        STEPS,
        {
          actions: ACTIONS.length,
          attempts: ledger.attempts,
          effects: ledger.effects,
          replays: ledger.result.replays,
          conflicts: ledger.result.conflicts,
          reconciled: ledger.reconciled,
        },
        { actions: ACTIONS.length, attempts: naive.attempts, effects: naive.effects },
      )}\n`,
    );
    const problems = ledgerProblems(ledger);
    const summaries: string[] = [];
    for (const scene of SCENES) {
      process.stdout.write(`\nscene: ${scene.name}\n`);
      const report = await scene.run({ root, say });
      process.stdout.write(`\n${report.table}\n`);
      summaries.push(report.summary);
      problems.push(...report.problems.map((p) => `${scene.name}: ${p}`));
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (problems.length > 0) {
      process.stdout.write(`\nFAILED: the ledger run is not exactly once:\n  ${problems.join('\n  ')}\n`);
      return 1;
    }
    process.stdout.write(
      `\nOK: every action took effect exactly once with tool-ledger (${seconds} s).\n${summaries.map((s) => `  ${s}\n`).join('')}`,
    );
    return 0;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const watchdog = setTimeout(() => {
  process.stderr.write(`demo: still running after ${BOUND_MS / 1000} s; stopping everything\n`);
  void killAllStacks().finally(() => process.exit(2));
}, BOUND_MS);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void killAllStacks().finally(() => process.exit(130)));
}

main().then(
  (code) => {
    clearTimeout(watchdog);
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(
      `demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
