import { createInterface } from 'node:readline/promises';
import type { Connection } from './connection';
import type { OperatorApi } from './operator-api';

/**
 * Everything the CLI touches outside itself, passed in so that tests run commands in-process and read
 * what they printed. {@link processIo} is the real terminal.
 */
export interface CliIo {
  /** Writes to standard output (tables, details, `--json` documents). */
  stdout(text: string): void;
  /** Writes to standard error (errors, hints, prompts, progress that is not the command's output). */
  stderr(text: string): void;
  /**
   * Asks a yes/no question; absent when there is no terminal to ask on, so approvals and rejections
   * then need `--digest` or `--yes`.
   */
  confirm?: (question: string) => Promise<boolean>;
  /** Where `TOOL_LEDGER_ENDPOINT`, `TOOL_LEDGER_TOKEN` and `AWS_REGION` are read. @default {} */
  env?: NodeJS.ProcessEnv;
  /** Epoch ms, for ages. @default Date.now */
  now?: () => number;
  /** Builds the API for a parsed connection; tests may hand in their own. @default `HttpOperatorApi.connect` */
  connect?: (connection: Connection) => OperatorApi | Promise<OperatorApi>;
  /**
   * Resolves when a long-running command should stop. The process's version listens for SIGINT and
   * SIGTERM only once a command asks, so every other command still dies on Ctrl-C as usual.
   */
  untilStopped?: () => Promise<void>;
}

/**
 * The process's own terminal: stdout, stderr, the environment, and a `[y/N]` prompt when both stdin and
 * stderr are terminals (the prompt goes to stderr so that stdout stays the command's output).
 *
 * @example
 * ```ts
 * process.exitCode = await main(process.argv.slice(2), processIo());
 * ```
 */
export function processIo(): CliIo {
  const io: CliIo = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    untilStopped: () =>
      new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }),
  };
  if (process.stdin.isTTY && process.stderr.isTTY) {
    io.confirm = async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const answer = await rl.question(`${question} [y/N] `);
        return /^y(es)?$/i.test(answer.trim());
      } finally {
        rl.close();
      }
    };
  }
  return io;
}
