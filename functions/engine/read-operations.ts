import { operationKey } from '../contract/keys';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import { isState, isTerminal, type OperationState, STATES } from '../domain/states';
import { TOOL_NAME_PATTERN } from '../domain/tool';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { InvalidCursorError, type ListingQuery, type Page } from './operation-store';
import { isExpired } from './transitions';

/**
 * Reads one operation of a tenant (one consistent GetItem). An expired terminal record is absent,
 * as it is for reservations.
 *
 * @example
 * ```ts
 * const record = await getOperation(deps, req, 'acme', 'run-42'); // throws not_found
 * ```
 */
export async function getOperation(
  deps: LedgerDeps,
  req: RequestContext,
  tenant: string,
  operationId: string,
): Promise<OperationRecord> {
  const record = await deps.store.get(operationKey(tenant, operationId));
  if (!record || isExpired(record, req.now)) throw new NotFoundError();
  return record;
}

/** Options of the operators' listing, as the query string gives them (checked here). */
export interface ListOptions {
  /**
   * A state, several comma-separated, `unresolved` (the default: every state that is not terminal,
   * the reconciliation queue) or `all` (every state, terminal included).
   */
  state?: unknown;
  /** Only operations of this tool. */
  tool?: unknown;
  /** Only operations created at or after this time (RFC 3339, e.g. `2026-11-29T10:00:00Z`). */
  since?: unknown;
  /** Only operations created before this time (RFC 3339). */
  until?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

/** Most records a listing page returns. */
export const MAX_LIST_LIMIT = 100;

/** Most index pages one listing request reads (each is at most `limit` entries). */
export const MAX_PAGES_PER_LISTING = 8;

/**
 * Index entries one listing request goes through at most: a page whose filter matches rarely comes
 * back short (even empty) with a cursor rather than keep a request reading the tenant's whole history.
 */
export const MAX_LIST_EXAMINED = 1000;

/** Entries read per shard and round when a filter needs the items. */
const READ_PER_ROUND = 100;

/** `state=` values besides the states themselves. */
export const STATE_SETS = { unresolved: 'unresolved', all: 'all' } as const;

const UNRESOLVED_STATES: readonly OperationState[] = STATES.filter((s) => !isTerminal(s));

/** RFC 3339 date-time with a zone: what `since` and `until` accept. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The tenant's operations, newest first (`GET /v1/operations`): by default its unresolved ones (the
 * reconciliation queue, the contract's §5), or any state, terminal included, one tool, a creation
 * window. Unresolved states only are read through the sparse `unresolved` GSI, whose cost is that of
 * the queue; anything else through the `operations` GSI, keyed by tenant and creation time, never a
 * table scan. The time window is part of the key condition; the tool is filtered in DynamoDB where
 * the index projects it, the state on the items. A request goes through at most
 * {@link MAX_LIST_EXAMINED} index entries: a rare match may come back as a short page with a cursor.
 * Expired terminal records are absent, as everywhere. Records reserved before the `operations` index
 * existed are listed only while they are unresolved.
 */
export async function listOperations(
  deps: LedgerDeps,
  req: RequestContext,
  tenant: string,
  options: ListOptions,
): Promise<Page> {
  const states = parseStates(options.state);
  const tool = parseTool(options.tool);
  const since = parseTime(options.since, 'since');
  const until = parseTime(options.until, 'until');
  if (since !== undefined && until !== undefined && since >= until) {
    throw new ValidationError('since must be before until', [{ path: 'since', message: 'invalid' }]);
  }
  let limit = 25;
  if (options.limit !== undefined && options.limit !== '') {
    limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`, [
        { path: 'limit', message: 'invalid' },
      ]);
    }
  }
  // An empty cursor is not "absent": the listing never issues one, so it would silently restart at
  // the newest operation for a client that lost its place.
  if (options.cursor !== undefined && (typeof options.cursor !== 'string' || options.cursor === '')) {
    throw new ValidationError('the cursor is not one this API issued', [
      { path: 'cursor', message: 'invalid' },
    ]);
  }
  const unresolvedOnly = states.every((s) => !isTerminal(s));
  const query: ListingQuery = {
    index: unresolvedOnly ? 'unresolved' : 'operations',
    limit,
    read: READ_PER_ROUND,
    shards: deps.config.unresolvedShards,
    accept: (record) => !isExpired(record, req.now),
  };
  // Every state of the index is no filter at all.
  const indexStates = unresolvedOnly ? UNRESOLVED_STATES : STATES;
  if (states.length < indexStates.length) query.states = states;
  if (tool !== undefined) query.tool = tool;
  if (since !== undefined) query.since = since;
  if (until !== undefined) query.until = until;

  const items: OperationRecord[] = [];
  let next = options.cursor as string | undefined;
  let examined = 0;
  try {
    // A filter is applied to what is read, so a round may come back short: keep reading, within
    // bounds (MAX_PAGES_PER_LISTING rounds, MAX_LIST_EXAMINED entries). A listing whose filter matches
    // little answers a short (even empty) page with a cursor rather than read the whole history in one
    // request; the client's next request goes on from there.
    let pages = 0;
    do {
      pages += 1;
      const page = await deps.store.listTenant(tenant, {
        ...query,
        limit: limit - items.length,
        ...(next ? { cursor: next } : {}),
      });
      items.push(...page.items);
      next = page.cursor;
      examined += page.examined;
    } while (
      next !== undefined &&
      items.length < limit &&
      examined < MAX_LIST_EXAMINED &&
      pages < MAX_PAGES_PER_LISTING
    );
  } catch (error) {
    if (error instanceof InvalidCursorError) {
      throw new ValidationError('the cursor is not one this API issued', [
        { path: 'cursor', message: 'invalid' },
      ]);
    }
    throw error;
  }
  return { items, cursor: next };
}

/** `state=`: the states it names, in the state machine's order. */
function parseStates(raw: unknown): readonly OperationState[] {
  if (raw === undefined || raw === '' || raw === STATE_SETS.unresolved) return UNRESOLVED_STATES;
  if (raw === STATE_SETS.all) return STATES;
  const parts = typeof raw === 'string' ? raw.split(',') : [];
  if (parts.length === 0 || !parts.every((part) => isState(part))) {
    throw new ValidationError(
      `state must be a state (${STATES.join(', ')}), several separated by commas, unresolved or all`,
      [{ path: 'state', message: 'invalid' }],
    );
  }
  return STATES.filter((s) => parts.includes(s));
}

function parseTool(raw: unknown): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !TOOL_NAME_PATTERN.test(raw)) {
    throw new ValidationError('tool must be a tool name ([a-z][a-z0-9_.-], at most 64 characters)', [
      { path: 'tool', message: 'invalid' },
    ]);
  }
  return raw;
}

/** An RFC 3339 time as epoch ms, or a validation error naming the parameter. */
function parseTime(raw: unknown, name: 'since' | 'until'): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const ms = typeof raw === 'string' && RFC3339.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 0) {
    throw new ValidationError(`${name} must be an RFC 3339 time with a zone, e.g. 2026-11-29T10:00:00Z`, [
      { path: name, message: 'invalid' },
    ]);
  }
  return ms;
}
