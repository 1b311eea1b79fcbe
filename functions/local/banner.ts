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
 * The line scripts wait for (SPEC §10), exactly:
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
 * from its schema; when none can be, it points at `GET /v1/tools` instead. Tokens someone chose are not
 * printed: the commands say `$TOKEN`, inside double quotes where a shell must expand it.
 *
 * @example
 * ```ts
 * process.stdout.write(`${greeting(stack, settings)}\n`);
 * ```
 */
export function greeting(
  stack: BannerStack,
  settings: Pick<LocalSettings, 'tokens' | 'defaultTokens' | 'dataDir'>,
): string {
  const lines = ['', `Bearer tokens (${SETTINGS.tokens.name}):`];
  for (const t of settings.tokens) {
    // Only the well-known defaults are shown; tokens someone chose are not printed back.
    const shown = settings.defaultTokens ? t.token : '<your token>';
    lines.push(`  ${shown.padEnd(14)} tenant=${t.tenant} roles=${t.roles.join('+')}`);
  }
  const agent = settings.tokens.find((t) => t.roles.includes('agent'));
  const token = settings.defaultTokens && agent ? agent.token : '$TOKEN';
  // Double quotes, so that a shell expands $TOKEN when the tokens are the user's own.
  const authorization = `-H "Authorization: Bearer ${token}"`;
  const listTools = `curl -s ${stack.apiUrl}/v1/tools ${authorization}`;
  const example = exampleCall(stack.tools);
  lines.push('');
  if (example) {
    const body = JSON.stringify({ tool: example.tool, arguments: example.arguments });
    lines.push(
      'Try it (run it twice: the second answer is the stored replay, Idempotent-Replayed: true):',
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
      `  ${listTools}`,
    );
  }
  lines.push(
    `Console (the reconciliation queue in a browser): npx tool-ledger console --endpoint ${stack.apiUrl} --token ${token}`,
    `Data folder: ${settings.dataDir} (delete it to start from an empty ledger). Ctrl-C stops.`,
    '',
  );
  return lines.join('\n');
}

/** A shell word that stays literal: single quotes, each inner single quote closed, escaped, reopened. */
function singleQuoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
