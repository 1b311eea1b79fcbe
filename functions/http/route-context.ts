import type { LedgerDeps, RequestContext } from '../engine/ledger-deps';
import type { Identity } from './identity';
import type { HttpRequest } from './request';

/**
 * What a route handler receives: the engine, this request, the caller, the captured path segments.
 * Its own module, so that handlers outside http/ (the MCP front door) depend on it and not on the
 * route table that imports them.
 */
export interface RouteContext {
  deps: LedgerDeps;
  req: RequestContext;
  request: HttpRequest;
  identity: Identity;
  /** Raw (percent-encoded) path captures. */
  params: Record<string, string>;
}
