import type { ToolDescription, ToolRegistry } from './registry';
import { inputJsonSchema } from './schema-version';

/**
 * Every tool of a registry with its JSON Schema, for `GET /v1/tools`, the MCP front door and models.
 * A module of its own: zod's JSON Schema generator is a tenth of a handler bundle, and only the API
 * (and local mode's banner) ever describes tools; the executor and the reconciler bundle without it.
 *
 * @example
 * ```ts
 * const published = describeTools(new ToolRegistry(builtinTools(env)));
 * ```
 */
export function describeTools(registry: ToolRegistry): ToolDescription[] {
  return registry.list().map((tool) => ({
    name: tool.name,
    description: tool.description,
    effect: tool.effect,
    requires_approval: tool.requiresApproval ?? false,
    timeout_ms: tool.timeoutMs ?? 10_000,
    max_attempts: tool.maxAttempts ?? 3,
    input_schema: inputJsonSchema(tool),
  }));
}
