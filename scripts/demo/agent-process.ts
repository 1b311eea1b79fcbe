import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AgentEvent, CallerAgentConfig } from './caller-agent';

/**
 * The caller-executed scene's agent as a real process (caller-agent-main.ts on Node with tsx's loader),
 * in a process group of its own, so that a crash is a `kill -9` of the whole process and nothing of it
 * survives. Its events arrive as they are printed, and the scene waits on them, never on the clock.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY = fileURLToPath(new URL('./caller-agent-main.ts', import.meta.url));

/** Groups still running, killed when this process exits whatever happened. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pgid of live) killGroup(pgid);
});

/** How an agent process ended. */
export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running agent process. */
export interface AgentProcess {
  pid: number;
  /** Every event printed so far. */
  readonly events: readonly AgentEvent[];
  /** Resolves at the first event (printed so far or later) that `matches`. */
  waitForEvent(matches: (event: AgentEvent) => boolean): Promise<AgentEvent>;
  /** Resolves when the process has exited. */
  exited: Promise<AgentExit>;
  /** SIGKILL to the whole group; resolves once the process has exited. */
  kill(): Promise<AgentExit>;
  /** stderr so far, for failure messages. */
  stderr(): string;
}

/**
 * Starts one agent process.
 *
 * @example
 * ```ts
 * const agent = startAgentProcess({ mode: 'naive', target, checkpointFile });
 * await agent.waitForEvent((e) => e.event === 'execute');
 * await agent.kill(); // { code: null, signal: 'SIGKILL' }
 * ```
 */
export function startAgentProcess(
  config: CallerAgentConfig,
  onEvent: (event: AgentEvent) => void = () => {},
): AgentProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, JSON.stringify(config)], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('the agent process did not start');
  live.add(pid);
  const events: AgentEvent[] = [];
  let waiters: { matches: (event: AgentEvent) => boolean; resolve: (event: AgentEvent) => void }[] = [];
  let partial = '';
  let errors = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    partial += chunk.toString('utf8');
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      const event = JSON.parse(line) as AgentEvent;
      events.push(event);
      onEvent(event);
      for (const waiter of waiters.filter((w) => w.matches(event))) waiter.resolve(event);
      waiters = waiters.filter((w) => !w.matches(event));
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString('utf8');
  });
  const exited = new Promise<AgentExit>((resolve) => {
    // 'close', not 'exit': every line the process printed has been read by then.
    child.once('close', (code, signal) => {
      live.delete(pid);
      resolve({ code, signal });
    });
  });
  return {
    pid,
    events,
    waitForEvent(matches) {
      const seen = events.find(matches);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ matches, resolve });
        void exited.then(() => reject(new Error(`the agent exited before the event:\n${errors}`)));
      });
    },
    exited,
    kill() {
      killGroup(pid);
      return exited;
    },
    stderr: () => errors,
  };
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
