import * as z from 'zod/mini';
import { ValidationError } from '../domain/errors';
import { checkWithSchema } from '../domain/schema-check';

/** Printable ASCII without space, as operation IDs (the contract, §1): safe in logs and headers. */
const LABEL = /^[\x21-\x7e]{1,255}$/;

const jsonObject = z.custom<Record<string, unknown>>(
  (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  { message: 'expected a JSON object' },
);

/** `POST /v1/operations`. Strict: a `tenant` (or any other extra field) is refused, never trusted. */
export const SubmitBody = z.strictObject({
  tool: z.string(),
  arguments: jsonObject,
  agent_run_id: z.optional(z.string().check(z.regex(LABEL, 'expected 1 to 255 printable ASCII characters'))),
});

/** `POST /v1/operations/{id}/approval`. */
export const ApprovalBody = z.strictObject({
  decision: z.enum(['approve', 'reject']),
  arguments_digest: z.string(),
});

/**
 * `POST /v1/operations/{id}/resolution`. `result` is any JSON, checked as I-JSON by the engine.
 * `attempt` is required: the resolution is a verdict on that attempt only.
 */
export const ResolutionBody = z.strictObject({
  outcome: z.enum(['applied', 'not_applied', 'failed']),
  result: z.optional(z.unknown()),
  attempt: z.number().check(z.int(), z.nonnegative()),
});

/**
 * `POST /v1/reconciliations`: no options yet. Strict, so a field a later version adds is refused by an
 * older server instead of silently ignored.
 */
export const ReconciliationBody = z.strictObject({});

/**
 * Parses a request body with one of the schemas above, or throws `validation_failed` listing the
 * offending paths. Field names a caller invented are shown only when they are short and plain, and
 * values never.
 *
 * @example
 * ```ts
 * const body = parseBody(SubmitBody, request.jsonBody()); // { tool, arguments, agent_run_id? }
 * ```
 */
export function parseBody<S extends z.ZodMiniType>(schema: S, value: unknown): z.output<S> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError('the body must be a JSON object', [{ path: '$', message: 'expected object' }]);
  }
  const parsed = checkWithSchema(schema, value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.slice(0, 20).flatMap((issue) => {
    const path = ['$', ...issue.path.map((p) => safeKey(String(p)))].join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .slice(0, 20)
        .map((key) => ({ path: `${path}.${safeKey(key)}`, message: `unknown field "${safeKey(key)}"` }));
    }
    return [{ path, message: issue.message }];
  });
  const first = issues[0];
  throw new ValidationError(
    `the body does not match the request schema${first ? `: ${first.path}: ${first.message}` : ''}`,
    issues,
  );
}

function safeKey(key: string): string {
  return /^[A-Za-z0-9_-]{1,40}$/.test(key) ? key : '<key>';
}
