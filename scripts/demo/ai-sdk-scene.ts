import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bearerToken, type Operation, ToolLedgerClient } from '../../client/index';
import { SETTINGS } from '../../functions/contract/environment';
import { startLocalStack } from '../local-stack';
import { startMailService } from './mail-service';
import type { DemoScene, SceneContext, SceneReport } from './scene';

/**
 * The demo's AI SDK scene: an AI SDK agent (`generateText`, the SDK's mock model) whose email tool runs
 * through `@tool-ledger/client/ai-sdk` against local mode. Its first process dies (SIGKILL) right after
 * the email went out and before the ledger heard of it; the ledger lets the claim's lease run out and
 * marks the operation uncertain; a new process runs the same step of the same conversation, the
 * adapter derives the same operation ID, the tool's `reconcile` finds the email at the mail service by
 * the call's key, and the model is told the email was already sent. One email.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const AGENT = 'scripts/demo/ai-sdk-agent.ts';

/** The operation ID the adapter derives: run, step (no assistant message before it), tool, position. */
export const AI_SDK_OPERATION_ID = 'demo-chat-7/0/notify_customer/0';

/** Local mode tuned for the scene: a fast reconciler and short backoffs, so the recovery takes seconds. */
const SCENE_ENV = {
  [SETTINGS.reconcileEveryMs.name]: '250',
  [SETTINGS.retryBaseMs.name]: '200',
  [SETTINGS.leaseGraceMs.name]: '500',
};

/** What the scene saw. */
export interface AiSdkSceneResult {
  /** Emails the mail service sent. */
  emails: number;
  /** How the first process ended (`SIGKILL`). */
  crashed: string | null;
  /** The operation after the second run. */
  operation: Operation;
  /** What the second run's model was told about the call. */
  told: { replayed?: boolean; state?: string } | undefined;
}

export async function aiSdkScene(
  root: string,
  env: Record<string, string>,
  say: (line: string) => void,
): Promise<AiSdkSceneResult> {
  const mail = await startMailService();
  const stack = await startLocalStack({ dataDir: join(root, 'ai-sdk-scene'), env });
  try {
    say(`local mode ready; a mail service at ${mail.url} that does not dedupe`);
    const first = await runAgent(stack.api, stack.tokens.agent, mail.url, 'crash');
    say(
      `run 1: the model asks notifyCustomer → the email goes out (${mail.sent.length} sent) → the agent is killed ` +
        `(${first.signal}) before the ledger hears how the call ended`,
    );
    const ledger = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken(stack.tokens.agent) });
    const waiting = await ledger.waitFor(AI_SDK_OPERATION_ID, {
      until: ['uncertain', 'needs_reconciliation'],
      timeoutMs: 30_000,
    });
    say(`ledger: the claim's 2 s lease ran out with no outcome → ${AI_SDK_OPERATION_ID} is ${waiting.state}`);
    const second = await runAgent(stack.api, stack.tokens.agent, mail.url, 'resume');
    const done = second.lines.find((line) => line.event === 'done');
    const told = done?.output as AiSdkSceneResult['told'];
    const operation = await ledger.get(AI_SDK_OPERATION_ID);
    say(
      `run 2 (a new process, the same conversation, a new call ID): same operation ID → reconcile found the ` +
        `email by its key → ${operation.state}${operation.reconciled ? ' (reconciled)' : ''}; the model was told ` +
        `replayed: ${told?.replayed}; it answered "${String(done?.text)}"`,
    );
    say(`emails sent: ${mail.sent.length}`);
    return { emails: mail.sent.length, crashed: first.signal, operation, told };
  } finally {
    await stack.stop();
    await mail.close();
  }
}

/** Runs the agent as its own process and returns its JSON lines and how it ended. */
function runAgent(
  api: string,
  token: string,
  mail: string,
  mode: 'crash' | 'resume',
): Promise<{ lines: Record<string, unknown>[]; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', AGENT, api, mail, mode], {
      cwd: ROOT,
      env: { ...process.env, TOOL_LEDGER_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const lines = out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const expected = mode === 'crash' ? signal === 'SIGKILL' : code === 0;
      if (!expected) reject(new Error(`the ${mode} run ended ${signal ?? `with ${code}`}:\n${out}${err}`));
      else resolve({ lines, signal });
    });
  });
}

/** Why the scene is wrong, if it is: anything but one email, recovered and told to the model as a replay. */
export function aiSdkProblems(scene: AiSdkSceneResult): string[] {
  const problems: string[] = [];
  if (scene.crashed !== 'SIGKILL') problems.push(`the first agent process was not killed (${scene.crashed})`);
  if (scene.emails !== 1) problems.push(`${scene.emails} emails`);
  if (scene.operation.state !== 'succeeded') problems.push(`the operation ended ${scene.operation.state}`);
  if (scene.told?.replayed !== true) problems.push('the model was not told of the replay');
  return problems;
}

async function run({ root, say }: SceneContext): Promise<SceneReport> {
  const scene = await aiSdkScene(root, SCENE_ENV, (line) => say('ai-sdk · tool-ledger', line));
  return {
    table: [
      'AI SDK agent (generateText, mock model) via @tool-ledger/client/ai-sdk',
      `  agent processes: 2 (the first ${scene.crashed ?? 'not killed'})`,
      `  emails sent:     ${scene.emails}`,
      `  operation:       ${scene.operation.state}${scene.operation.reconciled ? ' (reconciled)' : ''}`,
      `  model told:      replayed: ${String(scene.told?.replayed)}`,
    ].join('\n'),
    summary: `AI SDK agent killed between its email and the ledger's record: ${scene.emails} email across the crash`,
    problems: aiSdkProblems(scene),
  };
}

/** The scene, for the demo's list. */
export const aiSdkDemoScene: DemoScene = {
  name: 'an AI SDK agent (withLedger from /ai-sdk) killed between its email and the ledger hearing of it',
  run,
};
