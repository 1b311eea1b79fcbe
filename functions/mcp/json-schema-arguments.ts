import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import * as z from 'zod';

/**
 * Arguments of a gateway tool, checked against the upstream's JSON Schema instead of a zod schema the
 * deployment wrote. The result is still a zod schema, because that is what the ledger's tools have: the
 * engine validates and normalizes through it (so a failure is `validation_failed` with no record), and
 * the digest covers its output.
 *
 * Normalization is Ajv's: defaults the schema declares are filled in (`useDefaults`), on a copy, so a
 * call that omits a defaulted field and one that spells it out have the same digest, as with zod's
 * defaults. Nothing else is rewritten (no coercion, no removal of unknown fields): what the upstream
 * receives is what the caller sent, plus its own defaults.
 *
 * Ajv is configured as the MCP SDK configures it for its own validation (draft 2020-12 keywords it
 * knows, unknown keywords ignored, formats checked), so the gateway refuses what the SDK would, with
 * one difference: a schema's `pattern` and `patternProperties` run on RE2 (re2js), whose matching
 * time is linear in the input. An upstream's schema is not the deployment's code: a backtracking
 * pattern such as `^([a-z0-9]+)+$` would otherwise freeze every tenant's requests. A pattern RE2
 * cannot compile (backreferences, lookaround) makes the tool unusable (not served). A schema larger
 * than {@link MAX_INPUT_SCHEMA_BYTES} is not served either.
 */

/** Largest upstream input schema served, as JSON bytes. */
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;

/** Ajv's regular-expression engine: RE2, linear time; `u` is RE2's default. */
const linearRegExp = Object.assign(
  (pattern: string) => {
    const compiled = RE2JS.compile(pattern);
    return { test: (input: string) => compiled.test(input) };
  },
  { code: 're2js' },
);

// ajv-formats is CommonJS with a default export; under ESM interop it may arrive wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const ajv = addFormats(
  new Ajv({
    strict: false,
    validateSchema: false,
    allErrors: true,
    useDefaults: true,
    code: { regExp: linearRegExp },
  }),
);

/** An upstream's input schema that cannot be compiled: the tool is not served. */
export class UnusableSchemaError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnusableSchemaError';
  }
}

/**
 * A zod schema that validates with `jsonSchema` and outputs the arguments with its defaults filled.
 * Its JSON Schema (for `GET /v1/tools` and `tools/list`) is the upstream's own.
 *
 * @example
 * ```ts
 * const schema = jsonSchemaArguments({ type: 'object', properties: { n: { type: 'integer', default: 1 } } });
 * schema.parse({}); // { n: 1 }
 * ```
 */
export function jsonSchemaArguments(jsonSchema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  if (jsonSchema.type !== 'object') {
    throw new UnusableSchemaError('an MCP tool input schema must have type "object"');
  }
  if (Buffer.byteLength(JSON.stringify(jsonSchema)) > MAX_INPUT_SCHEMA_BYTES) {
    throw new UnusableSchemaError(`the input schema is larger than ${MAX_INPUT_SCHEMA_BYTES} bytes`);
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(withoutId(jsonSchema));
  } catch (error) {
    throw new UnusableSchemaError('the input schema does not compile', { cause: error });
  }
  return z
    .record(z.string(), z.unknown())
    .transform((input, ctx) => {
      const copy = structuredClone(input);
      if (validate(copy)) return copy;
      for (const error of (validate.errors ?? []).slice(0, 20)) {
        ctx.addIssue({ code: 'custom', message: messageOf(error), path: pathOf(error) });
      }
      return z.NEVER;
    })
    .meta(jsonSchema);
}

/** Ajv caches schemas by `$id`; two upstreams may reuse one, so each tool compiles its own copy. */
function withoutId(schema: Record<string, unknown>): Record<string, unknown> {
  const { $id: _id, ...rest } = schema;
  return rest;
}

/** The failing instance's path as segments (`/a/0` → `['a', 0]`). */
function pathOf(error: ErrorObject): (string | number)[] {
  return error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
}

/**
 * Ajv's message names the rule, never the value (`must be integer`, `must NOT have additional
 * properties`); the offending key Ajv keeps in `params` is dropped, because it is caller text.
 */
function messageOf(error: ErrorObject): string {
  return (error.message ?? 'invalid').slice(0, 200);
}
