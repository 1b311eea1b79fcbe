import type { LedgerPolicy } from '../domain/policy';
import { toolPolicy } from '../domain/policy';
import type { PreparedCall } from './prepare-call';

/**
 * The schema version's module, loaded by the first reservation and kept: it carries zod's JSON Schema
 * generator, which the executor's cold start does not load (functions/tools/schema-version.ts).
 */
let schemaVersions: Promise<typeof import('../tools/schema-version')> | undefined;

/**
 * The policy a new reservation stores on its record: the tool's policy for these arguments now, with
 * the version of the schema that normalized them (functions/domain/policy.ts).
 *
 * @example
 * ```ts
 * const reservation = await reserve(deps, req, call, caller, 'pending', await reservationPolicy(call), lease);
 * ```
 */
export async function reservationPolicy(call: PreparedCall): Promise<LedgerPolicy> {
  schemaVersions ??= import('../tools/schema-version');
  const { schemaVersion } = await schemaVersions;
  const policy: LedgerPolicy = toolPolicy(call.tool, call.args);
  const version = schemaVersion(call.tool);
  if (version !== undefined) policy.schema_version = version;
  return policy;
}
