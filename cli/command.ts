import type { ParseArgsConfig } from 'node:util';
import { InvalidOperationIdError } from '../client/errors';
import { assertOperationId } from '../client/operation-id';
import type { Connection } from './connection';
import { jsonText } from './format';
import type { OperatorApi } from './operator-api';
import { UsageError } from './usage-error';

/** Options as `parseArgs` takes them (`@types/node` does not export the name). */
export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** Option values as `parseArgs` returns them. */
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** Where a command writes. */
export interface Output {
  /** The command's output, for people (stdout). */
  print(text: string): void;
  /** Everything else: hints, previews in `--json` mode, warnings (stderr). */
  note(text: string): void;
  /** The command's output as one JSON document (stdout), for `--json`. */
  json(value: unknown): void;
}

/** What a command runs with. */
export interface CommandContext {
  /** The API, connected on first use, so that usage errors are found before anything is sent. */
  api(): Promise<OperatorApi>;
  /** Where the API is and how to sign for it (for commands that speak another protocol to it). */
  connection: Connection;
  /** Positional arguments after the command name. */
  args: string[];
  values: OptionValues;
  /** `--json`: one JSON document on stdout instead of text. */
  json: boolean;
  out: Output;
  /** Asks yes/no on a terminal; absent when there is none. */
  confirm?: ((question: string) => Promise<boolean>) | undefined;
  /** Epoch ms, read once per run. */
  now: number;
  /** Local mode's tokens spec from its data folder (`token`), if the CLI has a way to read it. */
  localTokens?: (() => string | undefined) | undefined;
  /**
   * Resolves when a long-running command (`console`) should stop: SIGINT or SIGTERM on a terminal,
   * whatever the caller decides in tests. Absent when nothing can stop it.
   */
  untilStopped?: (() => Promise<void>) | undefined;
}

/** One subcommand of `tool-ledger`. */
export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The synopsis after `tool-ledger `, e.g. `show <id> [--arguments] [--history]`. */
  usage: string;
  /** What it does and what it needs, for `tool-ledger <command> --help`. */
  description: string;
  /** Its own options (the global ones are added by the CLI). */
  options: OptionsConfig;
  /** Positional arguments it takes, at least and at most. */
  args: { min: number; max: number };
  /**
   * The role whose token the CLI takes from local mode's data folder when no credentials are given
   * (cli/connection.ts). @default 'operator'
   */
  role?: 'agent' | 'approver' | 'operator';
  run(ctx: CommandContext): Promise<void>;
}

/**
 * The operator answered "no" to a confirmation: nothing was sent. The CLI exits with 1, like a refusal
 * from the API, since the decision was not made.
 */
export class Declined extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Declined';
  }
}

/** A string option's value, if given. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A boolean option's value. */
export function flag(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

/**
 * A non-negative integer option (`--attempt 2`), or a usage error naming the option.
 *
 * @example
 * ```ts
 * integerOption(values, 'limit', 'list', 1); // 25 for --limit 25; UsageError for --limit ten
 * ```
 */
export function integerOption(
  values: OptionValues,
  name: string,
  command: string,
  min = 0,
): number | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < min) {
    throw new UsageError(`--${name} must be an integer of at least ${min}`, command);
  }
  return Number(raw);
}

/**
 * The operation ID argument, checked before anything is sent (the contract, §1: 1 to 255 characters from 0x21
 * to 0x7E), or a usage error.
 */
export function operationIdArg(raw: string | undefined, command: string): string {
  try {
    assertOperationId(raw);
    return raw;
  } catch (error) {
    if (error instanceof InvalidOperationIdError) throw new UsageError(error.message, command);
    throw error;
  }
}

/** The writers of a run, from the raw stdout/stderr functions. */
export function outputOf(stdout: (text: string) => void, stderr: (text: string) => void): Output {
  return {
    print: (text) => stdout(text.endsWith('\n') ? text : `${text}\n`),
    note: (text) => stderr(text.endsWith('\n') ? text : `${text}\n`),
    json: (value) => stdout(`${jsonText(value, 2)}\n`),
  };
}
