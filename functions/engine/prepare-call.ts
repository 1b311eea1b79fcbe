import { type CanonicalCall, canonicalCall, MAX_ARGUMENTS_DEPTH } from '../domain/digest';
import { ValidationError } from '../domain/errors';
import { assertIJsonValue } from '../domain/i-json';
import { assertOperationId } from '../domain/operation-id';
import { checkWithSchema } from '../domain/schema-check';
import type { AnyTool } from '../domain/tool';
import type { ToolRegistry } from '../tools/registry';

/** A tool call that passed every check of the contract's §3 steps 1–2: ready to reserve. */
export interface PreparedCall extends CanonicalCall {
  operationId: string;
  tool: AnyTool;
  /** The schema's output: what the tool receives and what the digest covers. */
  args: unknown;
}

/**
 * Validates and normalizes a call: operation ID, tool, arguments (I-JSON, schema, size, depth), then
 * the digest. Throws a typed error and touches nothing: a failed call creates no record and does not
 * consume the key.
 *
 * @example
 * ```ts
 * const call = prepareCall(registry, 'run-42', 'workspace.write_file', { path: 'a.txt', content: 'x' });
 * call.digest; // 'v1:…'
 * ```
 */
export function prepareCall(
  tools: ToolRegistry,
  operationId: unknown,
  toolName: unknown,
  rawArgs: unknown,
): PreparedCall {
  assertOperationId(operationId);
  const tool = tools.get(toolName);
  if (rawArgs === null || typeof rawArgs !== 'object' || Array.isArray(rawArgs)) {
    throw new ValidationError('arguments must be a JSON object', [
      { path: '$.arguments', message: 'expected object' },
    ]);
  }
  assertIJsonValue(rawArgs, MAX_ARGUMENTS_DEPTH, '$.arguments');
  const parsed = checkWithSchema(tool.schema, rawArgs);
  if (!parsed.success) {
    // Paths and messages may name caller-chosen keys: only short, plain key names are shown (a typo
    // such as "contents" is worth naming), never values.
    const issues = parsed.error.issues.slice(0, 20).flatMap((issue) => {
      const path = ['$', 'arguments', ...issue.path.map(plainSegment)].join('.');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.slice(0, 20).map((key) => ({
          path: `${path}.${plainSegment(key)}`,
          message: `unknown field "${plainSegment(key)}"`,
        }));
      }
      return [{ path, message: issue.message }];
    });
    const first = issues[0];
    throw new ValidationError(
      `arguments do not match the schema of ${tool.name}${first ? `: ${first.path}: ${first.message}` : ''}`,
      issues,
    );
  }
  return { operationId, tool, args: parsed.data, ...canonicalCall(tool.name, parsed.data) };
}

function plainSegment(segment: PropertyKey): string {
  if (typeof segment === 'number') return String(segment);
  const text = String(segment);
  return /^[A-Za-z0-9_-]{1,40}$/.test(text) ? text : '<key>';
}
