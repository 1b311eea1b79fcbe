import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTINGS } from '../functions/contract/environment';
import { TOKENS_FILE, tokenWithRole } from '../functions/local/local-tokens';

/**
 * Local mode (`npm start`) as a child process, for end-to-end tests, the demo and the load test:
 * started in its own process group on free ports, awaited through its ready line (never a sleep), and
 * killed as a whole group, so no process outlives its caller.
 */

/** SPEC §10's ready line, exactly. */
export const READY_LINE =
  /^tool-ledger ready api=(http:\/\/127\.0\.0\.1:\d+) sqs=(http:\/\/127\.0\.0\.1:\d+) queue=(\S+) dynamodb=(http:\/\/127\.0\.0\.1:\d+) table=(\S+)$/;

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Groups still running in this worker, killed when it exits whatever happened to the test. */
const live = new Set<number>();
process.once('exit', () => {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
});

/** How a stack process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running local stack. */
export interface LocalStackProcess {
  /** The ready line as printed. */
  readyLine: string;
  api: string;
  sqs: string;
  queueUrl: string;
  dynamodb: string;
  table: string;
  dataDir: string;
  /**
   * The bearer tokens local mode made for the data folder (read from its tokens file), when the caller
   * set no `TOOL_LEDGER_TOKENS`; empty strings otherwise.
   */
  tokens: { agent: string; approver: string };
  /** Process group ID (= the child's PID). */
  pgid: number;
  /** Everything printed so far, stdout and stderr interleaved, for failure messages. */
  output(): string;
  /** stdout lines printed so far. */
  stdoutLines(): string[];
  /** Resolves when the child exits. */
  exited: Promise<ExitStatus>;
  /** SIGTERM to the group; waits for the exit (SIGKILL after `boundMs`). */
  stop(boundMs?: number): Promise<ExitStatus>;
  /** SIGKILL to the whole group; resolves once no process of the group is left. */
  kill(): Promise<void>;
}

/** Options of {@link startLocalStack}. */
export interface StartOptions {
  /** `TOOL_LEDGER_DATA_DIR` (a temp folder the test owns). */
  dataDir: string;
  /** More environment for the stack. */
  env?: Record<string, string>;
  /** Longest wait for the ready line. @default 60000 */
  readyTimeoutMs?: number;
  /**
   * Modules the process imports before local mode (`--import`, after tsx's loader, so TypeScript works):
   * instrumentation for a measurement, never behaviour. @default none
   */
  preload?: string[];
}

/**
 * Starts `node --import tsx functions/local/main.ts` with `PORT=0` and waits for its ready line. Unless
 * `env` sets `TOOL_LEDGER_TOKENS`, local mode makes its tokens at the data folder's first start, and
 * they are read from the folder's tokens file into `tokens`.
 *
 * @example
 * ```ts
 * const stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_RECONCILE_EVERY_MS: '200' } });
 * await fetch(`${stack.api}/v1/tools`, { headers: { authorization: `Bearer ${stack.tokens.agent}` } });
 * await stack.kill();
 * ```
 */
export async function startLocalStack(options: StartOptions): Promise<LocalStackProcess> {
  // Node itself with tsx's loader, not the tsx CLI: the CLI is a parent process that relays signals and
  // SIGKILLs a child that is slow to acknowledge one, so on a busy machine a clean SIGTERM stop could
  // end as exit 143. Here the signal reaches local mode directly.
  const preload = (options.preload ?? []).flatMap((module) => ['--import', module]);
  const child = spawn(process.execPath, ['--import', 'tsx', ...preload, 'functions/local/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      [SETTINGS.dataDir.name]: options.dataDir,
      ...options.env,
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error('local stack did not start');
  live.add(pgid);
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let output = '';
  const lines: string[] = [];
  let partial = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const ready = new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ready line within ${options.readyTimeoutMs ?? 60_000} ms:\n${output}`)),
      options.readyTimeoutMs ?? 60_000,
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      partial += text;
      const parts = partial.split('\n');
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
    void exited.then((status) => {
      clearTimeout(timer);
      reject(
        new Error(`local stack exited (${status.code ?? status.signal}) before it was ready:\n${output}`),
      );
    });
  });
  let match: RegExpExecArray;
  try {
    match = await ready;
  } catch (error) {
    await killAndWait(child, pgid, exited);
    throw error;
  }
  const tokens = { agent: '', approver: '' };
  if (!(options.env?.[SETTINGS.tokens.name] ?? process.env[SETTINGS.tokens.name])) {
    const spec = await readFile(join(options.dataDir, TOKENS_FILE), 'utf8');
    tokens.agent = tokenWithRole(spec, 'agent') ?? '';
    tokens.approver = tokenWithRole(spec, 'approver') ?? '';
  }
  return {
    readyLine: match[0],
    api: match[1] as string,
    sqs: match[2] as string,
    queueUrl: match[3] as string,
    dynamodb: match[4] as string,
    table: match[5] as string,
    dataDir: options.dataDir,
    tokens,
    pgid,
    output: () => output,
    stdoutLines: () => [...lines],
    exited,
    async stop(boundMs = 40_000) {
      killGroup(pgid, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const status = await Promise.race([
        exited,
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), boundMs);
        }),
      ]);
      clearTimeout(timer);
      if (status === undefined) {
        await killAndWait(child, pgid, exited);
        return exited;
      }
      await groupGone(pgid);
      live.delete(pgid);
      return status;
    },
    kill: () => killAndWait(child, pgid, exited),
  };
}

/**
 * SIGKILLs every stack this process started that is still running, and resolves once their groups are
 * gone (bounded): for a script interrupted by Ctrl-C, which must leave no process behind.
 *
 * @example
 * ```ts
 * process.once('SIGINT', () => void killAllStacks().finally(() => process.exit(130)));
 * ```
 */
export async function killAllStacks(boundMs = 5_000): Promise<void> {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
  const deadline = Date.now() + boundMs;
  while ([...live].some(groupAlive) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether any process of the group is still alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

async function killAndWait(child: ChildProcess, pgid: number, exited: Promise<ExitStatus>): Promise<void> {
  killGroup(pgid, 'SIGKILL');
  if (child.exitCode === null && child.signalCode === null) await exited;
  await groupGone(pgid);
  live.delete(pgid);
}

/** Waits (bounded) until the kernel has reaped every process of the group. */
async function groupGone(pgid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still alive after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
