import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { SETTINGS } from '../functions/contract/environment';
import { TOKENS_FILE } from '../functions/local/local-tokens';
import type { Connection, LocalTokensSource } from './connection';
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
  /**
   * Local mode's tokens spec, from its data folder's tokens file (the CLI's credentials against local
   * mode when none are given). @default none
   */
  localTokens?: LocalTokensSource;
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
    localTokens: () => readLocalTokens(process.env),
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

/**
 * The tokens spec in local mode's data folder (`TOOL_LEDGER_DATA_DIR`, else `.data` in the working
 * folder), or undefined when there is no such file.
 *
 * @example
 * ```ts
 * readLocalTokens(process.env); // 'tl_…=local:agent+operator,tl_…=local:approver'
 * ```
 */
export function readLocalTokens(env: NodeJS.ProcessEnv): string | undefined {
  const dir = env[SETTINGS.dataDir.name]?.trim() || SETTINGS.dataDir.default;
  try {
    return readFileSync(join(resolve(dir), TOKENS_FILE), 'utf8').trim();
  } catch {
    return undefined;
  }
}
