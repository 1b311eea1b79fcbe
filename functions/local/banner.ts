import { resolve } from 'node:path';
import { SETTINGS } from '../contract/environment';
import type { ToolRegistry } from '../tools/registry';
import { exampleCall } from './example-call';
import type { LocalSettings } from './settings';
import type { RunningStack } from './stack';

/**
 * What local mode prints once it is ready: the line scripts wait for, then a greeting for people (the
 * tokens, a first call to one of the deployment's own tools, where the tools and the console are).
 */

/** What the banner needs to know of the running stack. */
export type BannerStack = Pick<
  RunningStack,
  'apiUrl' | 'sqsEndpoint' | 'queues' | 'dynamoEndpoint' | 'tableName'
> & {
  tools: ToolRegistry;
};

/**
 * The line scripts wait for (the contract, §10), exactly:
 * `tool-ledger ready api=… sqs=… queue=… dynamodb=… table=…`.
 *
 * @example
 * ```ts
 * process.stdout.write(`${readyLine(stack)}\n`); // one write: no log line can land inside it
 * ```
 */
export function readyLine(stack: BannerStack): string {
  return (
    `tool-ledger ready api=${stack.apiUrl} sqs=${stack.sqsEndpoint} queue=${stack.queues.queueUrl} ` +
    `dynamodb=${stack.dynamoEndpoint} table=${stack.tableName}`
  );
}

/**
 * What people read after the ready line: how to authenticate and a first call. The call names a write
 * tool the deployment has (with a custom tools module the shipped ones are gone) and arguments made up
 * from its schema; when none can be, it points at `GET /v1/tools` instead. The commands say `$TOKEN`
 * (inside double quotes, so a shell expands it); when the tokens are the ones local mode made for the
 * data folder they are printed, with the `export TOKEN=…` line that makes the commands run as printed.
 * Tokens someone chose (`TOOL_LEDGER_TOKENS`) are never printed back.
 *
 * @example
 * ```ts
 * process.stdout.write(`${greeting(stack, settings)}\n`);
 * ```
 */
export function greeting(
  stack: BannerStack,
  settings: Pick<LocalSettings, 'tokens' | 'tokensFile' | 'dataDir'>,
  cwd: string = process.cwd(),
): string {
  const made = settings.tokensFile !== undefined;
  const lines = [
    '',
    made
      ? `Bearer tokens (made for this data folder at its first start; kept in ${settings.tokensFile}, readable only by you):`
      : `Bearer tokens (${SETTINGS.tokens.name}; not printed):`,
  ];
  for (const t of settings.tokens) {
    lines.push(
      `  ${(made ? t.token : '<your token>').padEnd(14)} tenant=${t.tenant} roles=${t.roles.join('+')}`,
    );
  }
  const agent = settings.tokens.find((t) => t.roles.includes('agent'));
  const setToken =
    made && agent ? `export TOKEN=${agent.token}` : '# set TOKEN to your agent token first: export TOKEN=…';
  // Double quotes, so that a shell expands $TOKEN.
  const authorization = '-H "Authorization: Bearer $TOKEN"';
  const listTools = `curl -s ${stack.apiUrl}/v1/tools ${authorization}`;
  const example = exampleCall(stack.tools);
  lines.push('');
  if (example) {
    const body = JSON.stringify({ tool: example.tool, arguments: example.arguments });
    lines.push(
      'Try it (run it twice: the second answer is the stored replay, Idempotent-Replayed: true):',
      `  ${setToken}`,
      `  curl -i ${stack.apiUrl}/v1/operations \\`,
      `    ${authorization} -H 'Idempotency-Key: hello-1' \\`,
      `    -H 'Content-Type: application/json' \\`,
      `    -d ${singleQuoted(body)}`,
      '',
      `Tools: ${listTools}`,
    );
  } else {
    lines.push(
      'Try it: list the tools and their JSON Schemas, then POST /v1/operations with one of them, twice with',
      'the same Idempotency-Key (the second answer is the stored replay, Idempotent-Replayed: true):',
      `  ${setToken}`,
      `  ${listTools}`,
    );
  }
  // The CLI takes the data folder's operator token by itself when it talks to local mode; it looks in
  // TOOL_LEDGER_DATA_DIR, else .data in its working folder.
  const dataDirSetting =
    made && resolve(cwd, SETTINGS.dataDir.default) !== settings.dataDir
      ? `${SETTINGS.dataDir.name}=${settings.dataDir} `
      : '';
  const credentials = made ? dataDirSetting : `${SETTINGS.token.name}="$TOKEN" `;
  lines.push(
    `Console (the reconciliation queue in a browser): ${credentials}npx tool-ledger console --endpoint ${stack.apiUrl}`,
    `Data folder: ${settings.dataDir} (delete it to start from an empty ledger, with new tokens). Ctrl-C stops.`,
    '',
  );
  return lines.join('\n');
}

/** A shell word that stays literal: single quotes, each inner single quote closed, escaped, reopened. */
function singleQuoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
