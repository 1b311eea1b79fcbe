import { operationKey } from '../contract/keys';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { OperationRecord } from '../domain/operation';
import { isState, type OperationState } from '../domain/states';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { InvalidCursorError, type Page } from './operation-store';
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

/** Options of the operators' listing. */
export interface ListOptions {
  state?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

/** Most records a listing page returns. */
export const MAX_LIST_LIMIT = 100;

/** Most index pages one listing request reads (each is at most `limit` entries). */
export const MAX_PAGES_PER_LISTING = 8;

/**
 * The tenant's unresolved operations, newest first (`GET /v1/operations`, the contract's §5), through the sparse
 * `unresolved` GSI: terminal records are not in it, so the cost is that of the reconciliation queue.
 */
export async function listUnresolved(deps: LedgerDeps, tenant: string, options: ListOptions): Promise<Page> {
  let state: OperationState | undefined;
  if (options.state !== undefined && options.state !== '') {
    if (!isState(options.state) || ['succeeded', 'failed_terminal', 'rejected'].includes(options.state)) {
      throw new ValidationError('state must name an unresolved state', [
        { path: 'state', message: 'invalid' },
      ]);
    }
    state = options.state;
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
  const cursor = options.cursor;
  const items: OperationRecord[] = [];
  let next = cursor;
  try {
    // A state filter is applied after the key condition, so a page may come back short: keep reading,
    // but at most MAX_PAGES_PER_LISTING pages per request. A listing whose filter matches little of
    // the queue answers a short (even empty) page with a cursor rather than read the whole queue in
    // one request; the client's next request goes on from there.
    let pages = 0;
    do {
      pages += 1;
      const page = await deps.store.listUnresolved(tenant, {
        limit: limit - items.length,
        shards: deps.config.unresolvedShards,
        ...(state ? { state } : {}),
        ...(next ? { cursor: next } : {}),
      });
      items.push(...page.items);
      next = page.cursor;
    } while (next !== undefined && items.length < limit && pages < MAX_PAGES_PER_LISTING);
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
