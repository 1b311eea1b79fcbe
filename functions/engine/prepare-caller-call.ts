import { type CanonicalCall, canonicalCall, MAX_ARGUMENTS_DEPTH } from '../domain/digest';
import { ToolExecutedByLedgerError, ValidationError } from '../domain/errors';
import { assertIJsonValue } from '../domain/i-json';
import { assertOperationId } from '../domain/operation-id';
import { TOOL_NAME_PATTERN } from '../domain/tool';
import type { ToolRegistry } from '../tools/registry';

/** A call of an operation its caller executes that passed every check: ready to reserve. */
export interface CallerCall extends CanonicalCall {
  operationId: string;
  /** The caller's name for its tool: the tool-name rule, and none the deployment executes. */
  toolName: string;
}

/**
 * Validates a caller-executed call (the contract, §14): the operation ID, the tool name (the tool-name
 * rule, and not a tool the deployment runs itself), the arguments (an object, I-JSON, the same size and
 * depth limits), then the digest, exactly as for the deployment's tools. There is no schema: the
 * caller sends its arguments already validated and normalised. Throws a typed error and touches
 * nothing: a failed call creates no record.
 *
 * @example
 * ```ts
 * const call = prepareCallerCall(registry, 'run-42', 'crm.create_contact', { email: 'a@example.com' });
 * call.digest; // 'v1:…', the digest the same call would have if the deployment ran the tool
 * ```
 */
export function prepareCallerCall(
  tools: ToolRegistry,
  operationId: unknown,
  toolName: unknown,
  rawArgs: unknown,
): CallerCall {
  assertOperationId(operationId);
  if (typeof toolName !== 'string' || !TOOL_NAME_PATTERN.test(toolName)) {
    throw new ValidationError('tool must be a tool name: [a-z][a-z0-9_.-]{0,63}', [
      { path: '$.tool', message: 'invalid' },
    ]);
  }
  if (tools.find(toolName) !== undefined) throw new ToolExecutedByLedgerError();
  if (rawArgs === null || typeof rawArgs !== 'object' || Array.isArray(rawArgs)) {
    throw new ValidationError('arguments must be a JSON object', [
      { path: '$.arguments', message: 'expected object' },
    ]);
  }
  assertIJsonValue(rawArgs, MAX_ARGUMENTS_DEPTH, '$.arguments');
  return { operationId, toolName, ...canonicalCall(toolName, rawArgs) };
}
