import { describeTools } from '../tools/describe';
import type { ToolRegistry } from '../tools/registry';

/** A call the start banner can print: a write tool of the deployment and arguments it accepts. */
export interface ExampleCall {
  tool: string;
  arguments: Record<string, unknown>;
}

/** Filler for a free-text string: short, and the same as the shipped example's content. */
const SAMPLE_TEXT = 'hello';

/**
 * The first write tool of the registry for which arguments can be made up from its JSON Schema: each
 * required property filled (the schema's own `examples`, `default`, `const` or first `enum` value when it
 * has one; else a short text, a number at its minimum, `true`, an empty list, or a nested object filled
 * the same way), optional ones left out, and the result checked against the tool's own schema, so that a
 * refinement the JSON Schema cannot show never yields an example the tool refuses. Tools that need
 * approval come last: their first answer is a wait, not a result. Undefined when no write tool qualifies
 * (then the banner points at `GET /v1/tools`).
 *
 * @example
 * ```ts
 * exampleCall(new ToolRegistry(builtinTools(env)));
 * // { tool: 'workspace.write_file', arguments: { path: 'hello', content: 'hello' } }
 * ```
 */
export function exampleCall(registry: ToolRegistry): ExampleCall | undefined {
  const writes = describeTools(registry).filter((t) => t.effect === 'write');
  const ordered = [
    ...writes.filter((t) => !t.requires_approval),
    ...writes.filter((t) => t.requires_approval),
  ];
  for (const description of ordered) {
    const args = sample(description.input_schema, 0);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) continue;
    if (registry.get(description.name).schema.safeParse(args).success) {
      return { tool: description.name, arguments: args as Record<string, unknown> };
    }
  }
  return undefined;
}

/** Nesting beyond this is not worth an example on a terminal. */
const MAX_DEPTH = 3;

type Schema = {
  type?: unknown;
  examples?: unknown;
  default?: unknown;
  const?: unknown;
  enum?: unknown;
  properties?: Record<string, unknown>;
  required?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minItems?: number;
  format?: unknown;
  pattern?: unknown;
  multipleOf?: unknown;
};

/** A value the schema accepts, or undefined when none can be made up with confidence. */
function sample(raw: unknown, depth: number): unknown {
  if (typeof raw !== 'object' || raw === null || depth > MAX_DEPTH) return undefined;
  const schema = raw as Schema;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  switch (schema.type) {
    case 'object':
      return sampleObject(schema, depth);
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number':
      return sampleNumber(schema);
    case 'boolean':
      return true;
    case 'array':
      return (schema.minItems ?? 0) === 0 ? [] : undefined;
    default:
      return undefined; // untyped, unions, null: nothing a reader would recognise as an example
  }
}

function sampleObject(schema: Schema, depth: number): Record<string, unknown> | undefined {
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const out: Record<string, unknown> = {};
  for (const name of required) {
    const value = sample(schema.properties?.[name], depth + 1);
    if (value === undefined) return undefined;
    out[name] = value;
  }
  return out;
}

function sampleString(schema: Schema): string | undefined {
  // A format or a pattern says what the text must look like; guessing it would mislead.
  if (schema.format !== undefined || schema.pattern !== undefined) return undefined;
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Number.POSITIVE_INFINITY;
  if (SAMPLE_TEXT.length >= min && SAMPLE_TEXT.length <= max) return SAMPLE_TEXT;
  const length = Math.max(min, 1);
  return length <= max ? 'x'.repeat(length) : undefined;
}

function sampleNumber(schema: Schema): number | undefined {
  if (schema.multipleOf !== undefined) return undefined;
  const value =
    schema.minimum ?? (schema.exclusiveMinimum !== undefined ? Math.floor(schema.exclusiveMinimum) + 1 : 1);
  return schema.maximum === undefined || value <= schema.maximum ? value : undefined;
}
