import { parseArgs } from 'node:util';
import { SETTINGS } from '../functions/contract/environment';
import { type Command, flag, type OptionsConfig, type OptionValues, outputOf, stringOption } from './command';
import { consoleCommand } from './commands/console';
import { approveCommand, rejectCommand } from './commands/decide';
import { listCommand } from './commands/list';
import { mcpCommand } from './commands/mcp';
import { reconcileCommand } from './commands/reconcile';
import { resolveCommand } from './commands/resolve';
import { showCommand } from './commands/show';
import { tokenCommand } from './commands/token';
import { toolsCommand } from './commands/tools';
import { type Connection, DEFAULT_ENDPOINT, resolveConnection } from './connection';
import { describeFailure, EXIT } from './failure';
import { jsonText } from './format';
import type { CliIo } from './io';
import { HttpOperatorApi, type OperatorApi } from './operator-api';
import { UsageError } from './usage-error';

/** Every command, in the order help lists them. */
export const COMMANDS: readonly Command[] = [
  listCommand,
  showCommand,
  resolveCommand,
  approveCommand,
  rejectCommand,
  reconcileCommand,
  toolsCommand,
  consoleCommand,
  mcpCommand,
  tokenCommand,
];

/** Options every command accepts, before or after its name. */
const GLOBAL_OPTIONS: OptionsConfig = {
  endpoint: { type: 'string' },
  token: { type: 'string' },
  sigv4: { type: 'boolean' },
  region: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const GLOBAL_HELP =
  'Global options:\n' +
  `  --endpoint URL  the API (env ${SETTINGS.endpoint.name}; default ${DEFAULT_ENDPOINT}); on AWS the stage URL\n` +
  `  --token T       bearer token for local mode (env ${SETTINGS.token.name}, which keeps it out of shell history);\n` +
  `                  default against local mode: the token it made in its data folder (${SETTINGS.dataDir.name} or .data)\n` +
  '  --sigv4         sign with AWS SigV4 (IAM) using the default credential chain\n' +
  '  --region R      region for --sigv4 (default AWS_REGION, or the execute-api host name)\n' +
  '  --json          print one JSON document (errors as JSON on stderr)\n' +
  '  -h, --help      help for the CLI or a command';

/**
 * Runs the operators' CLI once and returns its exit code: 0 done, 1 the API refused or could not be
 * reached (or a confirmation was declined), 2 the command line was wrong (nothing was sent). Nothing
 * here touches `process`: the caller passes the argument list and the terminal, so tests run commands
 * in-process against a real API and read what was printed.
 *
 * ```
 * argv ─▶ command name ─▶ strict parse (global + command options) ─▶ --help? ─▶ arguments checked
 *      ─▶ connection (endpoint, token | SigV4) ─▶ command ─▶ output | problem ─▶ exit code
 * ```
 *
 * @example
 * ```ts
 * const code = await main(['list', '--state', 'uncertain'], processIo());
 * const code2 = await main(['show', 'run-42:s3:c0', '--json'], { stdout, stderr, env: {} });
 * ```
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  const output = outputOf(io.stdout, io.stderr);
  let endpoint: URL | undefined;
  try {
    const name = commandName(argv);
    if (name === undefined || name === 'help') {
      const topic = name === 'help' ? positionalsOf(argv)[1] : undefined;
      if (topic !== undefined) {
        output.print(commandHelp(findCommand(topic)));
        return EXIT.ok;
      }
      const wanted = name === 'help' || argv.includes('--help') || argv.includes('-h');
      if (wanted) output.print(mainHelp());
      else output.note(mainHelp());
      return wanted ? EXIT.ok : EXIT.usage;
    }
    const command = findCommand(name);
    const { values, positionals } = parseStrict(argv, command);
    if (flag(values, 'help')) {
      output.print(commandHelp(command));
      return EXIT.ok;
    }
    const args = positionals.slice(1);
    if (args.length < command.args.min || args.length > command.args.max) {
      throw new UsageError(`usage: tool-ledger ${command.usage}`, command.name);
    }
    const connection = resolveConnection(
      {
        endpoint: stringOption(values, 'endpoint'),
        token: stringOption(values, 'token'),
        sigv4: flag(values, 'sigv4'),
        region: stringOption(values, 'region'),
      },
      io.env ?? {},
      io.localTokens ? { role: command.role ?? 'operator', localTokens: io.localTokens } : undefined,
    );
    endpoint = connection.endpoint;
    let api: Promise<OperatorApi> | undefined;
    await command.run({
      api: () => {
        api ??= connect(io, connection);
        return api;
      },
      args,
      values,
      connection,
      json: flag(values, 'json'),
      out: output,
      confirm: io.confirm,
      now: (io.now ?? Date.now)(),
      untilStopped: io.untilStopped,
      localTokens: io.localTokens,
    });
    return EXIT.ok;
  } catch (error) {
    const failure = describeFailure(error, endpoint);
    io.stderr(json ? `${jsonText(failure.json)}\n` : failure.text);
    return failure.exitCode;
  }
}

async function connect(io: CliIo, connection: Connection): Promise<OperatorApi> {
  return io.connect ? io.connect(connection) : HttpOperatorApi.connect(connection);
}

/** Every option any command knows, for finding the command name before the strict parse. */
const ALL_OPTIONS: OptionsConfig = Object.assign(
  {},
  GLOBAL_OPTIONS,
  ...COMMANDS.map((command) => command.options),
);

/**
 * The positionals of a loose parse: options may come before the command (`--json list`), so the name
 * is the first positional once the values of known string options are set aside.
 */
function positionalsOf(argv: readonly string[]): string[] {
  return parseArgs({ args: [...argv], options: ALL_OPTIONS, strict: false, allowPositionals: true })
    .positionals;
}

function commandName(argv: readonly string[]): string | undefined {
  return positionalsOf(argv)[0];
}

function findCommand(name: string): Command {
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    const near = closestCommand(name);
    throw new UsageError(`unknown command '${name.slice(0, 40)}'${near ? ` (did you mean '${near}'?)` : ''}`);
  }
  return command;
}

/** The command a typo most likely meant: within two edits, or a prefix of exactly one command. */
function closestCommand(name: string): string | undefined {
  const typed = name.slice(0, 40).toLowerCase();
  const prefixed = COMMANDS.filter((c) => typed.length >= 2 && c.name.startsWith(typed));
  if (prefixed.length === 1) return prefixed[0]?.name;
  let best: { name: string; distance: number } | undefined;
  for (const command of COMMANDS) {
    const distance = editDistance(typed, command.name);
    if (distance <= 2 && (best === undefined || distance < best.distance))
      best = { name: command.name, distance };
  }
  return best?.name;
}

/** Levenshtein distance, for command suggestions (short strings only). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The strict parse: unknown options, missing values and repeats are usage errors. */
function parseStrict(
  argv: readonly string[],
  command: Command,
): { values: OptionValues; positionals: string[] } {
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: { ...GLOBAL_OPTIONS, ...command.options },
      strict: true,
      allowPositionals: true,
    });
    return { values: parsed.values as OptionValues, positionals: parsed.positionals };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError((error as Error).message.split('. ')[0] ?? 'invalid option', command.name);
    }
    throw error;
  }
}

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return (
    'tool-ledger: operate a tool-ledger deployment (the reconciliation queue, approvals, resolutions)\n\n' +
    'Usage: tool-ledger <command> [options]\n\n' +
    'Commands:\n' +
    COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n') +
    `\n\n${GLOBAL_HELP}\n\n` +
    'Exit codes: 0 done, 1 the API refused or could not be reached, 2 usage error (nothing sent).\n' +
    'Run `tool-ledger <command> --help` for a command’s options.'
  );
}

function commandHelp(command: Command): string {
  return `Usage: tool-ledger ${command.usage}\n\n${command.description}\n\n${GLOBAL_HELP}`;
}
