import type { OperationRecord } from './operation';
import { type AnyTool, TOOL_DEFAULTS } from './tool';

/**
 * The policy an operation was reserved under, bound to it for its whole life. A tool's policy is
 * code (or an upstream's annotations) and changes with a deployment; an operation's steps (the
 * executor's claim, a caller's retry, the reconciler, an approver) may run after such a change. So the
 * policy that governed the reservation is stored on the record (`policy`), every later step reads it
 * through {@link boundPolicy}, and a step that would run the tool under a policy that no longer
 * matches ({@link policyDrift}) hands the operation to an operator instead of going down another path.
 *
 * ```
 *  reserve ─ policy := the tool's policy now ─▶ record.policy
 *  claim / retry ─ boundPolicy(record) ─┬ the tool still matches ─▶ run under the stored policy
 *                                       └ effect / execution / approval / normalization changed
 *                                            ─▶ needs_reconciliation (policy_changed)
 *  reconciler ─ stored downstream_idempotent, max_attempts   approver ─ stored requires_approval
 * ```
 */

/**
 * Who runs an operation's effect: `ledger`, the deployment's own tool, or `caller`, an operation its
 * caller executes (the contract, §14), whose policy comes from the request and the deployment's caller
 * rules instead of a tool, fixed at reservation in the same field.
 */
export type Execution = OperationPolicy['execution'];

/** The stored policy of one operation (`OperationRecord.policy`): the ledger's tool's, or a caller's. */
export type OperationPolicy = LedgerPolicy | CallerPolicy;

/** The policy of an operation the deployment's own tool runs. */
export interface LedgerPolicy {
  execution: 'ledger';
  /** `write`: the full ledger; `read`: a read the ledger ran (the executor always claims, never takes the read path). */
  effect: 'write' | 'read';
  /** The operation was reserved `awaiting_approval`. */
  requires_approval: boolean;
  /** The target dedupes on the downstream key for these arguments (the tool's answer at reservation). */
  downstream_idempotent: boolean;
  /** Hard deadline of one attempt, ms: every attempt's lease is built from it. */
  timeout_ms: number;
  /**
   * `sha256:` + hex SHA-256 of the RFC 8785 form of the tool's published JSON Schema: which schema
   * normalized the stored arguments. Informational: whether a schema change matters to an operation is
   * decided by normalizing its stored arguments again (a description edit changes the version, not the
   * arguments). Absent when the schema has no JSON Schema form, or the process that reserved the
   * operation does not load zod's JSON Schema generator (the executor: see engine/reservation-policy.ts).
   */
  schema_version?: string;
}

/**
 * The policy of an operation its caller executes (the contract, §14): what the request asked for, with
 * what the deployment forces (approval OR'ed, attempts capped), fixed at reservation; later requests'
 * flags never change it. The record's own `max_attempts` stays the count the ledger enforces (the
 * same value).
 */
export interface CallerPolicy {
  execution: 'caller';
  /** Reserved `awaiting_approval`: the request asked for it or the deployment forces it. */
  requires_approval: boolean;
  /** The target dedupes on the downstream key: an uncertain attempt may be retried with the same key. */
  downstream_idempotent: boolean;
  max_attempts: number;
  /** How long a claim holds without a heartbeat, seconds (1–900). */
  lease_seconds: number;
}

/**
 * The policy that governs an operation's steps: the stored one, with the attempt budget the record has
 * always kept in `max_attempts`.
 */
export type BoundPolicy = OperationPolicy & {
  max_attempts: number;
};

/**
 * A tool's policy for one call now, without the schema version (which needs the JSON Schema generator,
 * loaded only where a reservation writes it).
 *
 * @example
 * ```ts
 * toolPolicy(webhookPost, args); // { execution: 'ledger', effect: 'write', requires_approval: false, ... }
 * ```
 */
export function toolPolicy(tool: AnyTool, args: unknown): Omit<LedgerPolicy, 'schema_version'> {
  return {
    execution: 'ledger',
    effect: tool.effect,
    requires_approval: tool.requiresApproval === true,
    downstream_idempotent: tool.downstreamIdempotent?.(args) === true,
    timeout_ms: tool.timeoutMs ?? TOOL_DEFAULTS.timeoutMs,
  };
}

/**
 * The one reader of an operation's policy. A record reserved before policies were stored has none:
 * then the tool's policy at the time of the step stands in for it, field by field, exactly as such
 * records were always governed (and `tool` undefined, a tool no longer registered, reads as a plain
 * write). Such records never show a drift.
 *
 * @example
 * ```ts
 * const policy = boundPolicy(record, toolOf(deps, record));
 * if (policy.downstream_idempotent) retryWithTheSameKey();
 * ```
 */
export function boundPolicy(
  record: Pick<OperationRecord, 'policy' | 'max_attempts' | 'arguments'>,
  tool: AnyTool | undefined,
): BoundPolicy {
  const stored = record.policy;
  if (stored !== undefined) return { ...stored, max_attempts: record.max_attempts };
  const current: Omit<LedgerPolicy, 'schema_version'> = tool
    ? toolPolicy(tool, tool.downstreamIdempotent ? JSON.parse(record.arguments) : undefined)
    : {
        execution: 'ledger',
        effect: 'write',
        requires_approval: false,
        downstream_idempotent: false,
        timeout_ms: TOOL_DEFAULTS.timeoutMs,
      };
  return { ...current, max_attempts: record.max_attempts };
}

/**
 * What keeps an operation's next attempt from running under the policy it was reserved under, in
 * words for the operator (never argument values); undefined when nothing does. Checked before every
 * claim of a stored operation:
 *
 * - `execution` or `effect` changed: the tool is no longer what the reservation agreed to run;
 * - the tool now requires approval and the operation was reserved without one;
 * - `renormalized`: the tool's schema now normalizes the stored arguments differently, or refuses them.
 *
 * Other changes are no reason to stop, because the stored policy governs them: the timeout of every
 * attempt, the attempt budget, downstream idempotence (the reconciler's rule), and an approval that is
 * no longer required (the operation was approved already).
 *
 * @example
 * ```ts
 * policyDrift(record, tool, args); // "the tool's effect changed from write to read"
 * ```
 */
export function policyDrift(
  record: Pick<OperationRecord, 'policy' | 'max_attempts' | 'arguments'>,
  tool: AnyTool,
  args: unknown,
  renormalized?: 'differs' | 'refused',
): string | undefined {
  const bound = boundPolicy(record, tool);
  const now = toolPolicy(tool, args);
  const changes: string[] = [];
  if (bound.execution !== now.execution) {
    // Reserved for its caller to run: the deployment's tool of that name is another thing altogether.
    changes.push(`its execution changed from ${bound.execution} to ${now.execution}`);
  } else if (now.effect !== bound.effect) {
    changes.push(`its effect changed from ${bound.effect} to ${now.effect}`);
  }
  if (now.requires_approval && !bound.requires_approval) {
    changes.push('it now requires approval, and the operation was reserved without one');
  }
  if (renormalized === 'differs') {
    changes.push('its schema now normalizes the stored arguments differently');
  } else if (renormalized === 'refused') {
    changes.push('its schema now refuses the stored arguments');
  }
  if (changes.length === 0) return undefined;
  return `the tool's policy changed since the operation was reserved (${changes.join('; ')}); it was not run again`;
}
