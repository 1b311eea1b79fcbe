import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The demo's launcher of local mode (`npm start`) as a child process: its own process group, free
 * ports, the ready line awaited (never a sleep), every stdout line kept (the transition log is how
 * the demo counts reconciled outcomes), and SIGKILL to the whole group, which is both the demo's
 * "worker killed mid-call" fault and its cleanup. test/support/local-stack.ts does the same for the
 * test suite; scripts do not import from test/.
 */

/** SPEC §10's ready line. */
const READY_LINE =
  /^tool-ledger ready api=(http:\/\/127\.0\.0\.1:\d+) sqs=(http:\/\/127\.0\.0\.1:\d+) queue=(\S+) dynamodb=(http:\/\/127\.0\.0\.1:\d+) table=(\S+)$/;

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX_CLI = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

/** Groups still running, killed however this process ends (an uncaught error included). */
const live = new Set<number>();
process.once('exit', () => {
  for (const pgid of live) signalGroup(pgid, 'SIGKILL');
});

/**
 * SIGKILLs every stack still running and resolves once their groups are gone (bounded): for an
 * interrupted demo, which must not leave a process behind.
 *
 * @example
 * ```ts
 * process.once('SIGINT', () => void killAllStacks().finally(() => process.exit(130)));
 * ```
 */
export async function killAllStacks(boundMs = 5_000): Promise<void> {
  for (const pgid of live) signalGroup(pgid, 'SIGKILL');
  const deadline = Date.now() + boundMs;
  while ([...live].some(groupAlive) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A running local mode. */
export interface DemoStack {
  api: string;
  sqs: string;
  queueUrl: string;
  /** Process group ID (= the child's PID). */
  pgid: number;
  /** stdout lines printed so far. */
  lines(): string[];
  /** stdout and stderr so far, for error messages. */
  output(): string;
  /** SIGTERM to the group, SIGKILL after `boundMs`; resolves once no process of the group is left. */
  stop(boundMs?: number): Promise<void>;
  /** SIGKILL to the whole group (a crash: nothing is flushed); resolves once the group is gone. */
  kill(): Promise<void>;
}

/** Options of {@link startDemoStack}. */
export interface DemoStackOptions {
  /** `TOOL_LEDGER_DATA_DIR`: the ledger and the workspace; a restart on the same folder loses nothing. */
  dataDir: string;
  /** More environment (reconciler interval, idempotent origins, ...). */
  env?: Record<string, string>;
  /** @default 30000 */
  readyTimeoutMs?: number;
}

/**
 * Starts `tsx functions/local/main.ts` with `PORT=0` and resolves at its ready line.
 *
 * @example
 * ```ts
 * const stack = await startDemoStack({ dataDir, env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '250' } });
 * await stack.kill(); // all of it, at once
 * ```
 */
export async function startDemoStack(options: DemoStackOptions): Promise<DemoStack> {
  const child = spawn(process.execPath, [TSX_CLI, 'functions/local/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      TOOL_LEDGER_DATA_DIR: options.dataDir,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ...options.env,
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error('local mode did not start');
  live.add(pgid);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  let partial = '';
  const lines: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const timeoutMs = options.readyTimeoutMs ?? 30_000;
  const ready = new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line within ${timeoutMs} ms`)), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      const parts = (partial + text).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const match = READY_LINE.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match);
        }
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error('local mode exited before it was ready'));
    });
  });
  const kill = async () => {
    signalGroup(pgid, 'SIGKILL');
    await groupGone(pgid, child, exited);
  };
  let match: RegExpExecArray;
  try {
    match = await ready;
  } catch (error) {
    await kill();
    throw new Error(`${(error as Error).message}:\n${output}`);
  }
  return {
    api: match[1] as string,
    sqs: match[2] as string,
    queueUrl: match[3] as string,
    pgid,
    lines: () => [...lines],
    output: () => output,
    kill,
    async stop(boundMs = 15_000) {
      signalGroup(pgid, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), boundMs);
        }),
      ]);
      clearTimeout(timer);
      if (!stopped) signalGroup(pgid, 'SIGKILL');
      await groupGone(pgid, child, exited);
    },
  };
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) until the child has exited and the kernel has reaped every process of its group. */
async function groupGone(pgid: number, child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) await exited;
  const deadline = Date.now() + 10_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) {
      signalGroup(pgid, 'SIGKILL');
      throw new Error(`process group ${pgid} still alive`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  live.delete(pgid);
}
