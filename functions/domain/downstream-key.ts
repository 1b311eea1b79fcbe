import { createHash } from 'node:crypto';

/**
 * The key a tool passes to a target system that deduplicates on its own (SPEC §1): stable for a
 * tenant + operation ID, at most 64 characters of `[A-Za-z0-9_-]` so that it fits even EC2's
 * ClientToken. It is a hash, so it reveals neither the tenant nor the operation ID.
 *
 * @example
 * ```ts
 * downstreamKey('acme', 'run-42-step-3'); // 'tl1_' + 43 base64url characters
 * ```
 */
export function downstreamKey(tenant: string, operationId: string): string {
  const hash = createHash('sha256')
    .update(`tool-ledger\u0000${tenant}\u0000${operationId}`, 'utf8')
    .digest('base64url');
  return `tl1_${hash}`;
}
