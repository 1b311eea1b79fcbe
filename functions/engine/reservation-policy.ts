import type { LedgerPolicy } from '../domain/policy';
import { toolPolicy } from '../domain/policy';
import type { LedgerDeps } from './ledger-deps';
import type { PreparedCall } from './prepare-call';

/**
 * The policy a new reservation stores on its record: the tool's policy for these arguments now, with
 * the version of the schema that normalized them where the process can tell it (`deps.schemaVersion`,
 * set by the API, which bundles zod's JSON Schema generator for `GET /v1/tools` anyway; the executor's
 * cold start does not load it, and its reservations carry no version: the field is informational, see
 * functions/domain/policy.ts).
 *
 * @example
 * ```ts
 * const reservation = await reserve(deps, req, call, caller, 'pending', reservationPolicy(deps, call), lease);
 * ```
 */
export function reservationPolicy(deps: Pick<LedgerDeps, 'schemaVersion'>, call: PreparedCall): LedgerPolicy {
  const policy: LedgerPolicy = toolPolicy(call.tool, call.args);
  const version = deps.schemaVersion?.(call.tool);
  if (version !== undefined) policy.schema_version = version;
  return policy;
}
