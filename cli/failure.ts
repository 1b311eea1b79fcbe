import type { Problem } from '../client/api-types';
import {
  DeadlineExceededError,
  InvalidOperationIdError,
  ToolLedgerError,
  ToolLedgerRequestError,
} from '../client/errors';
import { SETTINGS } from '../functions/contract/environment';
import { Declined } from './command';
import { clean } from './format';
import { transportReason } from './operator-api';
import { UsageError } from './usage-error';

/** Exit codes: the contract with scripts that call the CLI. */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** The API refused or could not be reached, or a confirmation was declined: nothing was decided. */
  failed: 1,
  /** The command line was wrong: nothing was sent. */
  usage: 2,
} as const;

/** How a failure is reported: the exit code, lines for people, and a JSON document for `--json`. */
export interface Failure {
  exitCode: number;
  text: string;
  json: { error: Record<string, unknown> };
}

/**
 * Turns anything a command threw into what the CLI prints and returns. API refusals show the
 * problem's stable `code`, status and title (and its `detail`, which the API keeps free of argument
 * values), plus a hint where the next step is clear; anything unexpected shows its class and message,
 * made inert for the terminal. `endpoint`, when known, is named in transport failures.
 *
 * @example
 * ```ts
 * const failure = describeFailure(error, connection.endpoint);
 * io.stderr(failure.text);
 * return failure.exitCode;
 * ```
 */
export function describeFailure(error: unknown, endpoint?: URL): Failure {
  if (error instanceof UsageError || error instanceof InvalidOperationIdError) {
    const command = error instanceof UsageError ? error.command : undefined;
    const help = command ? `tool-ledger ${command} --help` : 'tool-ledger --help';
    return {
      exitCode: EXIT.usage,
      text: `tool-ledger: ${clean(error.message)}\nsee: ${help}\n`,
      json: { error: { code: 'usage', message: error.message } },
    };
  }
  if (error instanceof Declined) {
    return {
      exitCode: EXIT.failed,
      text: `tool-ledger: ${error.message}\n`,
      json: { error: { code: 'declined', message: error.message } },
    };
  }
  if (error instanceof ToolLedgerRequestError) {
    const problem = error.problem;
    const title = typeof problem.title === 'string' ? `: ${clean(problem.title)}` : '';
    const lines = [`tool-ledger: ${clean(problem.code)} (${error.status})${title}`];
    if (typeof problem.detail === 'string' && problem.detail !== problem.title)
      lines.push(`  ${clean(problem.detail)}`);
    lines.push(...problemHints(problem));
    return {
      exitCode: EXIT.failed,
      text: `${lines.join('\n')}\n`,
      json: { error: { status: error.status, ...problem } },
    };
  }
  if (error instanceof DeadlineExceededError) {
    const last = error.lastStatus === undefined ? 'no answer' : `last status ${error.lastStatus}`;
    const reason = error.cause === undefined ? '' : `, ${transportReason(error.cause)}`;
    return {
      exitCode: EXIT.failed,
      text:
        `tool-ledger: ${error.code}: no final answer${endpoint ? ` from ${endpoint.origin}` : ''} after ` +
        `${error.attempts} attempt(s) (${last}${reason})\n` +
        `  is the endpoint right (--endpoint, ${SETTINGS.endpoint.name}) and the API up (npm start)?\n`,
      json: { error: { code: error.code, attempts: error.attempts, last_status: error.lastStatus ?? null } },
    };
  }
  if (error instanceof ToolLedgerError) {
    return {
      exitCode: EXIT.failed,
      text: `tool-ledger: ${clean(error.code)}: ${clean(error.message)}\n`,
      json: { error: { code: error.code, message: error.message } },
    };
  }
  // Not the API's answer: a local failure (no AWS credentials for --sigv4, a bug). Its message is ours
  // or the SDK's, never a server's.
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  return {
    exitCode: EXIT.failed,
    text: `tool-ledger: ${clean(name)}: ${clean(message)}\n`,
    json: { error: { code: 'client_error', class: name, message } },
  };
}

/** The next step for problems where it is clear. */
function problemHints(problem: Problem): string[] {
  switch (problem.code) {
    case 'unauthenticated':
      return [
        `  pass --token (or set ${SETTINGS.token.name}) for local mode, or --sigv4 on AWS; against local mode the CLI`,
        `  otherwise takes the token npm start made in its data folder (${SETTINGS.dataDir.name}, else .data here)`,
      ];
    case 'not_found':
      return ['  your tenant has no operation with that ID (another tenant’s operations are never visible)'];
    case 'state_changed': {
      const op = problem.operation as Record<string, unknown> | undefined;
      const state = op?.state ?? problem.state;
      const attempt = op?.attempt ?? problem.attempt;
      if (state === undefined) return [];
      return [
        `  the operation is now ${clean(String(state))}` +
          (attempt === undefined ? '' : `, attempt ${clean(String(attempt))}`),
      ];
    }
    case 'approval_mismatch':
      return [
        '  the digest given is not the one of this operation’s arguments: nothing was decided',
        '  check the arguments with `tool-ledger show <id> --arguments` and decide on the digest it prints',
      ];
    case 'validation_failed': {
      const issues = Array.isArray(problem.issues) ? (problem.issues as Record<string, unknown>[]) : [];
      return issues
        .slice(0, 10)
        .map((issue) => `  ${clean(String(issue.path))}: ${clean(String(issue.message))}`);
    }
    case 'gateway_timeout':
      return [
        '  the gateway stopped waiting; the work may still finish on the server',
        '  a reconciliation pass is safe to run again: every decision in it is conditional',
      ];
    case 'ledger_unavailable':
      return ['  the ledger is throttled or unreachable; nothing changed, try again shortly'];
    default:
      return [];
  }
}
