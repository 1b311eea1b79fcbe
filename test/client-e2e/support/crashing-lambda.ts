import {
  type CheckpointDurableExecutionRequest,
  type DurableExecutionClient,
  type DurableExecutionInvocationInput,
  DurableExecutionInvocationInputWithClient,
  type DurableLambdaHandler,
  type OperationUpdate,
} from '@aws/durable-execution-sdk-js';
import { deferred } from '../../client/support/manual-clock';

/**
 * The part of the Lambda service that the SDK's local runner (`LocalDurableTestRunner`) does not play:
 * an invocation that dies. The runner runs the durable handler in-process against its checkpoint
 * server; on AWS, when an invocation dies (a timeout, an out-of-memory kill, a lost sandbox), the
 * service invokes the function again for the same execution, and the SDK replays it from its
 * checkpoints. `handler` wraps the durable handler for the runner and does the same:
 *
 * ```
 * invocation 1 ── … ── crash() ✕ (frozen: its pending promises never settle, as a killed process sends nothing more)
 *                          └── (after `holdResume`'s gate, if any) invocation 2 with the execution's checkpointed state
 * ```
 *
 * A crash happens where the test calls `crash()` (from a step's effect, from a fetch to the ledger) or
 * when the SDK sends a checkpoint the test named (`crashOnCheckpoint`), before it reaches the
 * checkpoint server. Faults only: the SDK, its handler and its checkpoint server run as they are.
 */
export class CrashingLambda {
  /** How many times the durable handler was invoked (a resumed invocation counts). */
  invocations = 0;
  private running: { resolve: (value: typeof CRASHED) => void } | undefined;
  private checkpointCrash: ((update: OperationUpdate) => boolean) | undefined;
  private resumeGate: Promise<void> | undefined;
  private readonly crashWatchers: (() => void)[] = [];
  private crashes = 0;

  constructor(private readonly durable: DurableLambdaHandler) {}

  /**
   * Kills the running invocation here: the caller never gets an answer (the promise never settles),
   * and the next invocation of the execution starts.
   */
  crash(): Promise<never> {
    const running = this.running;
    this.running = undefined;
    this.crashes++;
    running?.resolve(CRASHED);
    for (const watcher of this.crashWatchers.splice(0)) watcher();
    return new Promise<never>(() => {});
  }

  /** The invocation dies as it sends the first checkpoint with an update `match` accepts. */
  crashOnCheckpoint(match: (update: OperationUpdate) => boolean): this {
    this.checkpointCrash = match;
    return this;
  }

  /** The next invocation after a crash waits for the returned function to be called. */
  holdResume(): () => void {
    const gate = deferred();
    this.resumeGate = gate.promise;
    return () => gate.resolve();
  }

  /** Resolves once an invocation has crashed. */
  crashed(): Promise<void> {
    if (this.crashes > 0) return Promise.resolve();
    return new Promise((resolve) => this.crashWatchers.push(resolve));
  }

  /** The handler to give `LocalDurableTestRunner`. */
  readonly handler: DurableLambdaHandler = async (event, context) => {
    let current = event;
    for (;;) {
      this.invocations++;
      const crash = deferred<typeof CRASHED>();
      this.running = { resolve: crash.resolve };
      const dead = { value: false };
      const answer = await Promise.race([
        this.durable(this.withClient(current, dead), { ...context }),
        crash.promise,
      ]);
      if (answer !== CRASHED) return answer;
      dead.value = true;
      await this.resumeGate;
      this.resumeGate = undefined;
      current = await resumed(current);
    }
  };

  /**
   * The event with a checkpoint client that crashes on the named checkpoint and, once its invocation
   * is dead, never answers again.
   */
  private withClient(event: DurableExecutionInvocationInput, dead: { value: boolean }) {
    const real = clientOf(event);
    const lambda = this;
    const client: DurableExecutionClient = {
      getExecutionState(params, logger) {
        if (dead.value) return new Promise(() => {});
        return real.getExecutionState(params, logger);
      },
      checkpoint(params: CheckpointDurableExecutionRequest, logger) {
        if (dead.value) return new Promise(() => {});
        const match = lambda.checkpointCrash;
        if (match && (params.Updates ?? []).some(match)) {
          lambda.checkpointCrash = undefined;
          dead.value = true;
          return lambda.crash();
        }
        return real.checkpoint(params, logger);
      },
    };
    return new DurableExecutionInvocationInputWithClient(event, client);
  }
}

const CRASHED = Symbol('crashed');

function clientOf(event: DurableExecutionInvocationInput): DurableExecutionClient {
  if (!DurableExecutionInvocationInputWithClient.isInstance(event)) {
    throw new Error('CrashingLambda runs under LocalDurableTestRunner, whose events carry their client');
  }
  return event.durableExecutionClient;
}

/** The event of the service's next invocation: the same execution, its state as checkpointed now. */
async function resumed(event: DurableExecutionInvocationInput): Promise<DurableExecutionInvocationInput> {
  const client = clientOf(event);
  const state = await client.getExecutionState({
    DurableExecutionArn: event.DurableExecutionArn,
    CheckpointToken: event.CheckpointToken,
  });
  return new DurableExecutionInvocationInputWithClient(
    {
      DurableExecutionArn: event.DurableExecutionArn,
      CheckpointToken: event.CheckpointToken,
      InitialExecutionState: { Operations: state.Operations ?? [] },
    },
    client,
  );
}
