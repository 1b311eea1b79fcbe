import type { OperationState } from '../../client/api-types';
import type { ListOptions } from '../../client/tool-ledger-client';
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

/** Every state, in the state machine's order. */
export const ALL_STATES: readonly OperationState[] = [
  ...UNRESOLVED_STATES.slice(0, 3),
  'succeeded',
  'failed_terminal',
  ...UNRESOLVED_STATES.slice(3),
  'rejected',
];

/** Most operations the API returns per page (functions/engine/read-operations.ts). */
const MAX_LIMIT = 100;

/** A tool name as tools declare it. */
const TOOL_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

/** `--since 2h`: a duration back from now. */
const RELATIVE = /^(\d{1,6})(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An RFC 3339 time with a zone. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * `tool-ledger list`: the tenant's operations (`GET /v1/operations`), newest first: by default the
 * reconciliation queue (every unresolved state), or any state, one tool and a creation window. The
 * API reads them through an index keyed by tenant and creation time, never a table scan. The table is
 * stdout; the hint for the next page goes to stderr so that a piped table stays a table.
 */
export const listCommand: Command = {
  name: 'list',
  summary: 'list operations newest first (by default the unresolved ones): by state, tool, time',
  usage: 'list [--state S[,S…]|unresolved|all] [--tool T] [--since T] [--until T] [--limit N] [--cursor C]',
  description:
    'Lists the tenant’s operations, newest first: ID, tool, state, who executes it, attempt, age and the\n' +
    'start of the arguments digest. Without --state it lists the unresolved ones (the reconciliation\n' +
    'queue). Needs the operator role.\n\n' +
    'Options:\n' +
    `  --state S    a state, several separated by commas, unresolved (default) or all; states:\n` +
    `               ${ALL_STATES.join(', ')}\n` +
    '  --tool T     only operations of this tool\n' +
    '  --since T    only operations created at or after T: a time with a zone\n' +
    '               (2026-11-29T10:00:00Z) or a duration back from now (90s, 15m, 2h, 7d)\n' +
    '  --until T    only operations created before T (same forms)\n' +
    `  --limit N    operations per page, 1 to ${MAX_LIMIT} (default 25)\n` +
    '  --cursor C   the next page, as printed after a full page (with the same filters)',
  options: {
    state: { type: 'string' },
    tool: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
  },
  args: { min: 0, max: 0 },
  async run({ api, values, json, out, now }) {
    const state = parseState(stringOption(values, 'state'));
    const tool = stringOption(values, 'tool');
    if (tool !== undefined && !TOOL_NAME.test(tool)) {
      throw new UsageError(
        '--tool must be a tool name: a lower-case letter, then letters, digits, _ . or -, at most 64',
        'list',
      );
    }
    const since = parseTime(stringOption(values, 'since'), 'since', now);
    const until = parseTime(stringOption(values, 'until'), 'until', now);
    if (since !== undefined && until !== undefined && since >= until) {
      throw new UsageError('--since must be before --until', 'list');
    }
    const limit = integerOption(values, 'limit', 'list', 1);
    if (limit !== undefined && limit > MAX_LIMIT) {
      throw new UsageError(`--limit must be at most ${MAX_LIMIT}`, 'list');
    }
    const cursor = stringOption(values, 'cursor');
    const options: ListOptions = {};
    if (state !== undefined) options.state = state;
    if (tool !== undefined) options.tool = tool;
    if (since !== undefined) options.since = new Date(since);
    if (until !== undefined) options.until = new Date(until);
    if (limit !== undefined) options.limit = limit;
    if (cursor !== undefined) options.cursor = cursor;
    const page = await (await api()).list(options);
    if (json) {
      out.json({ operations: page.operations, cursor: page.cursor ?? null });
      return;
    }
    if (page.operations.length === 0) {
      out.print(emptyText(state, tool, since !== undefined || until !== undefined));
    } else {
      out.print(
        table(
          ['ID', 'TOOL', 'STATE', 'EXECUTOR', 'ATTEMPT', 'AGE', 'DIGEST'],
          page.operations.map((op) => [
            clean(op.operation_id),
            clean(op.tool),
            clean(op.state),
            op.execution === 'caller' ? 'caller' : 'ledger',
            String(op.attempt),
            age(op.created_at, now),
            digestPrefix(op.arguments_digest),
          ]),
        ),
      );
    }
    if (page.cursor !== undefined) {
      // The cursor continues this very query: the hint repeats its filters, with absolute times.
      const again = [
        'tool-ledger list',
        ...(state === undefined ? [] : [`--state ${typeof state === 'string' ? state : state.join(',')}`]),
        ...(tool === undefined ? [] : [`--tool ${tool}`]),
        ...(since === undefined ? [] : [`--since ${new Date(since).toISOString()}`]),
        ...(until === undefined ? [] : [`--until ${new Date(until).toISOString()}`]),
        ...(limit === undefined ? [] : [`--limit ${limit}`]),
        `--cursor ${shellWord(page.cursor)}`,
      ];
      out.note(`more: ${again.join(' ')}`);
    }
  },
};

/** `--state`: a state, several, `unresolved` or `all`; undefined when not given. */
function parseState(raw: string | undefined): ListOptions['state'] {
  if (raw === undefined) return undefined;
  if (raw === 'unresolved' || raw === 'all') return raw;
  const parts = raw.split(',');
  const unknown = parts.filter((p) => !ALL_STATES.includes(p as OperationState));
  if (raw === '' || unknown.length > 0) {
    throw new UsageError(
      `--state must be unresolved, all, or states separated by commas (${ALL_STATES.join(', ')}); ` +
        `not ${clean(unknown.join(',') || '""')}`,
      'list',
    );
  }
  const states = ALL_STATES.filter((s) => parts.includes(s));
  return states.length === 1 ? (states[0] as OperationState) : states;
}

/** `--since` / `--until`: epoch ms from a zoned RFC 3339 time or a duration back from `now`. */
function parseTime(raw: string | undefined, name: 'since' | 'until', now: number): number | undefined {
  if (raw === undefined) return undefined;
  const relative = RELATIVE.exec(raw);
  if (relative) return now - Number(relative[1]) * UNIT_MS[relative[2] as keyof typeof UNIT_MS];
  const ms = RFC3339.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 0) {
    throw new UsageError(
      `--${name} must be a time with a zone (2026-11-29T10:00:00Z) or a duration back from now (90s, 15m, 2h, 7d)`,
      'list',
    );
  }
  return ms;
}

function emptyText(state: ListOptions['state'], tool: string | undefined, windowed: boolean): string {
  const what =
    state === undefined || state === 'unresolved'
      ? 'no unresolved operations'
      : state === 'all'
        ? 'no operations'
        : `no operations in state ${typeof state === 'string' ? state : state.join(', ')}`;
  return `${what}${tool === undefined ? '' : ` of tool ${tool}`}${windowed ? ' in that time window' : ''}`;
}

/** A cursor is opaque: quote it for a POSIX shell unless it is plainly safe. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:=+-]+$/.test(text) ? text : `'${clean(text).replace(/'/g, `'\\''`)}'`;
}
