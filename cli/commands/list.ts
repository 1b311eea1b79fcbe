import type { OperationState } from '../../client/api-types';
import { type Command, integerOption, stringOption } from '../command';
import { age, clean, digestPrefix, table } from '../format';
import { UsageError } from '../usage-error';

/** The states of the reconciliation queue (every state that is not terminal). */
export const UNRESOLVED_STATES: readonly OperationState[] = [
  'awaiting_approval',
  'queued',
  'pending',
  'failed_retryable',
  'uncertain',
  'needs_reconciliation',
];

/** Most operations the API returns per page (functions/engine/read-operations.ts). */
const MAX_LIMIT = 100;

/**
 * `tool-ledger list`: the tenant's reconciliation queue (`GET /v1/operations`), newest first. The
 * table is stdout; the hint for the next page goes to stderr so that a piped table stays a table.
 */
export const listCommand: Command = {
  name: 'list',
  summary: 'list the reconciliation queue (unresolved operations), newest first',
  usage: 'list [--state S] [--limit N] [--cursor C]',
  description:
    'Lists the tenant’s unresolved operations, newest first: ID, tool, state, attempt, age and the start\n' +
    'of the arguments digest. Needs the operator role.\n\n' +
    'Options:\n' +
    `  --state S    only this state: ${UNRESOLVED_STATES.join(', ')}\n` +
    `  --limit N    operations per page, 1 to ${MAX_LIMIT} (default 25)\n` +
    '  --cursor C   the next page, as printed after a full page',
  options: {
    state: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
  },
  args: { min: 0, max: 0 },
  async run({ api, values, json, out, now }) {
    const state = stringOption(values, 'state');
    if (state !== undefined && !UNRESOLVED_STATES.includes(state as OperationState)) {
      throw new UsageError(`--state must be one of: ${UNRESOLVED_STATES.join(', ')}`, 'list');
    }
    const limit = integerOption(values, 'limit', 'list', 1);
    if (limit !== undefined && limit > MAX_LIMIT) {
      throw new UsageError(`--limit must be at most ${MAX_LIMIT}`, 'list');
    }
    const cursor = stringOption(values, 'cursor');
    const page = await (await api()).list({
      ...(state === undefined ? {} : { state: state as OperationState }),
      ...(limit === undefined ? {} : { limit }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    if (json) {
      out.json({ operations: page.operations, cursor: page.cursor ?? null });
      return;
    }
    if (page.operations.length === 0) {
      out.print(
        state === undefined ? 'no unresolved operations' : `no unresolved operations in state ${state}`,
      );
    } else {
      out.print(
        table(
          ['ID', 'TOOL', 'STATE', 'ATTEMPT', 'AGE', 'DIGEST'],
          page.operations.map((op) => [
            clean(op.operation_id),
            clean(op.tool),
            clean(op.state),
            String(op.attempt),
            age(op.created_at, now),
            digestPrefix(op.arguments_digest),
          ]),
        ),
      );
    }
    if (page.cursor !== undefined) {
      const again = [
        'tool-ledger list',
        ...(state === undefined ? [] : [`--state ${state}`]),
        ...(limit === undefined ? [] : [`--limit ${limit}`]),
        `--cursor ${shellWord(page.cursor)}`,
      ];
      out.note(`more: ${again.join(' ')}`);
    }
  },
};

/** A cursor is opaque: quote it for a POSIX shell unless it is plainly safe. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:=+-]+$/.test(text) ? text : `'${clean(text).replace(/'/g, `'\\''`)}'`;
}
