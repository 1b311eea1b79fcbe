import {
  type ChatCompletionLike,
  type Operation,
  operationIdFor,
  runChatCompletionToolCalls,
  type ToolLedgerClient,
  ToolLedgerRequestError,
  type ToolNameMap,
} from '../../client/index';
import type { ToolLedgerQueueSender } from '../../client/sqs-sender';
import type { WebhookTarget } from '../webhook-target';
import type { LostResponseProxy } from './lost-response-proxy';
import {
  AGENT_RUN_ID,
  type DemoAction,
  type DemoStep,
  type ReceiverOrigins,
  STEPS,
  toolArguments,
} from './script';

/**
 * The demo's agent with tool-ledger: every intended action gets its ID from `operationIdFor` (run,
 * step, position) and goes through the client, the queue sender or the model adapter, while the
 * step's fault is injected around it. The agent itself does nothing clever: it retries with the same
 * ID and waits for outcomes, which is all the ledger asks of it.
 */

/** What the ledger agent acts on; the crash is the caller's, because it owns the stack. */
export interface LedgerWorld {
  /** A client whose endpoint is `proxy`. */
  client: ToolLedgerClient;
  /** Between the agent and the API; loses responses on request. */
  proxy: LostResponseProxy;
  /** A sender to the running stack's work queue. */
  sender(): ToolLedgerQueueSender;
  names: ToolNameMap;
  origins: ReceiverOrigins;
  targets: Record<'plain' | 'idempotent', WebhookTarget>;
  /** SIGKILLs the whole stack, starts it again on the same data folder, and points the proxy at it. */
  crashAndRestart(): Promise<void>;
  /** Progress for people. */
  say(line: string): void;
}

/** What the agent saw. */
export interface LedgerRunResult {
  /** Answers marked `replayed: true`: the ledger returned a stored outcome instead of running again. */
  replays: number;
  /** Calls refused with 422: same operation ID, other arguments; nothing ran. */
  conflicts: number;
  /** Each action's operation as it ended. */
  operations: Operation[];
}

/** The ID of an action: its position in the run, never the model's call ID or a hash of arguments. */
export function operationIdOf(action: Pick<DemoAction, 'step' | 'callIndex'>): string {
  return operationIdFor({ agentRunId: AGENT_RUN_ID, step: action.step, callIndex: action.callIndex });
}

/**
 * Plays the script through tool-ledger.
 *
 * @example
 * ```ts
 * const { replays, conflicts, operations } = await runWithLedger(world);
 * ```
 */
export async function runWithLedger(world: LedgerWorld): Promise<LedgerRunResult> {
  const seen = { replays: 0, conflicts: 0 };
  for (const step of STEPS) {
    await runStep(world, step, seen);
  }
  world.say('waiting for every operation to settle (the reconciler finishes the uncertain ones)');
  const operations: Operation[] = [];
  for (const action of STEPS.flatMap((s) => s.actions)) {
    operations.push(await settled(world.client, operationIdOf(action)));
  }
  const counts = new Map<string, number>();
  for (const op of operations) counts.set(op.state, (counts.get(op.state) ?? 0) + 1);
  world.say(`settled: ${[...counts].map(([state, n]) => `${n} ${state}`).join(', ')}`);
  return { ...seen, operations };
}

async function runStep(
  world: LedgerWorld,
  step: DemoStep,
  seen: { replays: number; conflicts: number },
): Promise<void> {
  const { client, proxy } = world;
  switch (step.fault) {
    case 'model_turn_replay': {
      const context = { agentRunId: AGENT_RUN_ID, step: step.step, names: world.names };
      await runChatCompletionToolCalls(client, modelResponse(world, step, 1), context);
      // The orchestrator died before it saved the step, so it asks the model again: new call IDs,
      // one call worded differently. Positions are the same, so the operation IDs are too.
      const again = await runChatCompletionToolCalls(client, modelResponse(world, step, 2), context);
      for (const result of again.results) {
        if (result.envelope.replayed) seen.replays += 1;
        if (result.envelope.state === 'conflict') seen.conflicts += 1;
      }
      world.say(
        `step ${step.step}: model turn replayed: ${again.results.filter((r) => r.envelope.replayed).length} replayed, ` +
          `${again.results.filter((r) => r.envelope.state === 'conflict').length} conflict`,
      );
      return;
    }
    case 'lost_response':
      for (const action of step.actions) {
        const operationId = operationIdOf(action);
        proxy.loseNextResponseFor(operationId);
        const outcome = await client.call({ operationId, tool: action.tool, arguments: args(world, action) });
        if (outcome.replayed) seen.replays += 1;
        world.say(
          `step ${step.step}: ${action.tool} lost its response; retry ${outcome.replayed ? 'replayed' : 'ran'} (${outcome.attempts} requests)`,
        );
      }
      return;
    case 'duplicate_delivery': {
      const sender = world.sender();
      for (const action of step.actions) {
        const input = {
          operationId: operationIdOf(action),
          tool: action.tool,
          arguments: args(world, action),
        };
        for (let copy = 0; copy < 3; copy++) await sender.send(input);
      }
      // The orchestrator reads the outcomes before its next step, as it would before acting on them.
      const states: string[] = [];
      for (const action of step.actions) states.push((await settled(client, operationIdOf(action))).state);
      world.say(
        `step ${step.step}: ${step.actions.length} actions sent to SQS, 3 copies each: ${states.join(', ')}`,
      );
      return;
    }
    case 'worker_killed':
      for (const action of step.actions) {
        if (action.tool !== 'webhook.post') throw new Error('the crash is scripted around a webhook');
        const operationId = operationIdOf(action);
        const accepted = await client.call({
          operationId,
          tool: action.tool,
          arguments: args(world, action),
          async: true,
        });
        await world.targets[action.receiver].waitForHit(action.path);
        world.say(
          `step ${step.step}: ${accepted.operation.state}; the worker is inside the webhook call: kill -9`,
        );
        await world.crashAndRestart();
        world.say(`step ${step.step}: local mode restarted on the same data folder`);
      }
      return;
    case 'timeout':
      for (const action of step.actions) {
        const outcome = await client.call({
          operationId: operationIdOf(action),
          tool: action.tool,
          arguments: args(world, action),
        });
        world.say(
          `step ${step.step}: the webhook hung past the tool's timeout: ${outcome.status} ${outcome.operation.state}`,
        );
      }
      return;
    case 'none': {
      const context = { agentRunId: AGENT_RUN_ID, step: step.step, names: world.names };
      const { results } = await runChatCompletionToolCalls(client, modelResponse(world, step, 1), context);
      world.say(`step ${step.step}: ${results.map((r) => r.envelope.state).join(', ')}`);
      return;
    }
  }
}

function args(world: LedgerWorld, action: DemoAction): unknown {
  return toolArguments(action, world.origins);
}

/** A Chat Completions response as a model would send it for the step (generation `n`). */
function modelResponse(world: LedgerWorld, step: DemoStep, generation: number): ChatCompletionLike {
  return {
    choices: [
      {
        message: {
          tool_calls: step.actions.map((action) => ({
            id: `call_gen${generation}_${action.step}_${action.callIndex}`,
            type: 'function',
            function: {
              name: world.names.toModel(action.tool),
              arguments: JSON.stringify(toolArguments(action, world.origins, generation > 1)),
            },
          })),
        },
      },
    ],
  };
}

/**
 * Waits for an operation to be terminal. An operation sent to the queue exists only once a worker
 * has taken its message; until then `GET` answers 404, which `waitFor` does not wait through.
 */
async function settled(
  client: ToolLedgerClient,
  operationId: string,
  timeoutMs = 40_000,
): Promise<Operation> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.get(operationId);
      return await client.waitFor(operationId, { timeoutMs: Math.max(1, deadline - Date.now()) });
    } catch (error) {
      const missing = error instanceof ToolLedgerRequestError && error.status === 404;
      if (!missing || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
