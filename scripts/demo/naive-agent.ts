import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { WebhookTarget } from '../webhook-target';
import type { LostResponseProxy } from './lost-response-proxy';
import { type DemoAction, type DemoStep, type ReceiverOrigins, STEPS, toolArguments } from './script';

/**
 * The same script without tool-ledger: the agent performs each effect itself (a file write, an
 * append, a plain `fetch`) and, like most agents, retries what failed. It meets the same faults as
 * the ledger run. What it cannot know is whether a failed try took effect, so every fault turns into
 * a duplicate: this run is the baseline the ledger is measured against.
 */

/** What the naive agent acts on. */
export interface NaiveWorld {
  /** Where its files go. */
  workspaceDir: string;
  /** The receivers' own origins. */
  origins: ReceiverOrigins;
  targets: Record<'plain' | 'idempotent', WebhookTarget>;
  /** In front of the plain receiver: loses responses on request. */
  plainProxy: LostResponseProxy;
  /** How long one webhook try may take before the agent gives up on it (the tool's timeout). */
  timeoutMs: number;
  say(line: string): void;
}

/** What the naive agent did. */
export interface NaiveRunResult {
  /** Effects started (every try, whether or not its answer came back). */
  attempts: number;
}

/** The most tries per action, as a typical retry helper allows. */
const MAX_TRIES = 3;

/**
 * Plays the script without the ledger.
 *
 * @example
 * ```ts
 * const { attempts } = await runWithoutLedger(world);
 * ```
 */
export async function runWithoutLedger(world: NaiveWorld): Promise<NaiveRunResult> {
  const counter = { attempts: 0 };
  for (const step of STEPS) await runStep(world, step, counter);
  return counter;
}

/** One try of an action; `via` is the origin to post to, `signal` ends the try. */
type Perform = (
  action: DemoAction,
  options?: { regenerated?: boolean; via?: string; signal?: AbortSignal },
) => Promise<void>;

async function runStep(world: NaiveWorld, step: DemoStep, counter: { attempts: number }): Promise<void> {
  const perform: Perform = async (action, options = {}) => {
    counter.attempts += 1;
    await performOnce(world, action, options);
  };
  switch (step.fault) {
    case 'model_turn_replay':
      for (const action of step.actions) await withRetries(() => perform(action));
      // The orchestrator died before saving the step and asks the model again: same intent, so
      // the same actions, and nothing tells the agent that they already happened.
      for (const action of step.actions) await withRetries(() => perform(action, { regenerated: true }));
      world.say(`step ${step.step}: model turn replayed: every call ran again`);
      return;
    case 'lost_response':
      for (const action of step.actions) {
        let lost = false;
        await withRetries(async () => {
          if (action.tool === 'webhook.post' && action.receiver === 'plain') {
            if (!lost) world.plainProxy.loseNextResponse((r) => r.path === action.path);
            lost = true;
            await perform(action, { via: world.plainProxy.url });
            return;
          }
          await perform(action);
          // The effect happened; its answer is what gets lost.
          if (!lost) {
            lost = true;
            throw new Error('lost response');
          }
        });
      }
      world.say(`step ${step.step}: responses lost, so the agent tried again`);
      return;
    case 'duplicate_delivery':
      // At-least-once delivery: the consumer gets each message three times and runs each copy.
      for (const action of step.actions) {
        for (let copy = 0; copy < 3; copy++) await withRetries(() => perform(action));
      }
      world.say(`step ${step.step}: 3 deliveries of each message, each one run`);
      return;
    case 'worker_killed':
      for (const action of step.actions) {
        if (action.tool !== 'webhook.post') throw new Error('the crash is scripted around a webhook');
        // The worker dies in the middle of the call; its replacement gets the work again and,
        // knowing nothing of the first try, runs it.
        const crash = new AbortController();
        const first = perform(action, { signal: crash.signal }).catch(() => undefined);
        await world.targets[action.receiver].waitForHit(action.path);
        crash.abort();
        await first;
        await withRetries(() => perform(action));
      }
      world.say(`step ${step.step}: the worker died mid-call; its replacement ran the call again`);
      return;
    case 'timeout':
      for (const action of step.actions) await withRetries(() => perform(action));
      world.say(`step ${step.step}: the webhook hung past the timeout; the agent tried again`);
      return;
    case 'none':
      for (const action of step.actions) await withRetries(() => perform(action));
      return;
  }
}

async function performOnce(
  world: NaiveWorld,
  action: DemoAction,
  options: { regenerated?: boolean; via?: string; signal?: AbortSignal },
): Promise<void> {
  const args = toolArguments(action, world.origins, options.regenerated) as Record<string, unknown>;
  switch (action.tool) {
    case 'workspace.write_file': {
      const file = join(world.workspaceDir, action.path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, String(args.content));
      return;
    }
    case 'workspace.append_line': {
      const file = join(world.workspaceDir, action.path);
      await mkdir(dirname(file), { recursive: true });
      await appendFile(file, `${String(args.line)}\n`);
      return;
    }
    case 'webhook.post': {
      const origin = options.via ?? world.origins[action.receiver];
      const timeout = AbortSignal.timeout(world.timeoutMs);
      const response = await fetch(`${origin}${action.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(action.json),
        signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`webhook answered ${response.status}`);
      return;
    }
  }
}

/** Tries until one try succeeds, at most {@link MAX_TRIES}: the retry loop most agents have. */
async function withRetries(fn: () => Promise<void>): Promise<void> {
  let lastError: unknown;
  for (let tryNumber = 1; tryNumber <= MAX_TRIES; tryNumber++) {
    try {
      await fn();
      return;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
