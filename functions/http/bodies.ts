import * as z from 'zod/mini';
import { CALLER_MAX_ATTEMPTS } from '../domain/caller-tools';
import { CLAIM_ID_PATTERN } from '../domain/claim-token';
import { ValidationError } from '../domain/errors';
import { checkWithSchema } from '../domain/schema-check';

/** Printable ASCII without space, as operation IDs (the contract, §1): safe in logs and headers. */
const LABEL = /^[\x21-\x7e]{1,255}$/;

const jsonObject = z.custom<Record<string, unknown>>(
  (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  { message: 'expected a JSON object' },
);

/** A caller's lease, seconds (the contract, §14). */
const leaseSeconds = z
  .number()
  .check(z.int(), z.gte(1, 'expected 1 to 900'), z.lte(900, 'expected 1 to 900'));

/**
 * `POST /v1/operations`. Strict: a `tenant` (or any other extra field) is refused, never trusted. The
 * fields after `execution` belong to operations the caller executes (the contract, §14); the route
 * refuses them on a ledger-executed call ({@link CALLER_ONLY_FIELDS}).
 */
export const SubmitBody = z.strictObject({
  tool: z.string(),
  arguments: jsonObject,
  agent_run_id: z.optional(z.string().check(z.regex(LABEL, 'expected 1 to 255 printable ASCII characters'))),
  execution: z.optional(z.enum(['ledger', 'caller'])),
  lease_seconds: z.optional(leaseSeconds),
  requires_approval: z.optional(z.boolean()),
  downstream_idempotent: z.optional(z.boolean()),
  max_attempts: z.optional(
    z
      .number()
      .check(
        z.int(),
        z.gte(CALLER_MAX_ATTEMPTS.min, 'expected 1 to 10'),
        z.lte(CALLER_MAX_ATTEMPTS.max, 'expected 1 to 10'),
      ),
  ),
  claim_id: z.optional(
    z.string().check(z.regex(CLAIM_ID_PATTERN, 'expected 22 to 128 characters of [A-Za-z0-9_-]')),
  ),
});

/** Fields of {@link SubmitBody} that only an operation its caller executes takes. */
export const CALLER_ONLY_FIELDS = [
  'lease_seconds',
  'requires_approval',
  'downstream_idempotent',
  'max_attempts',
  'claim_id',
] as const;

/** `POST /v1/operations/{id}/lease`: the claim's heartbeat. */
export const LeaseBody = z.strictObject({
  token: z.string(),
  lease_seconds: z.optional(leaseSeconds),
});

/** `POST /v1/operations/{id}/outcome`: a caller's outcome. `result` is any JSON, checked by the engine. */
export const OutcomeBody = z.strictObject({
  token: z.string(),
  outcome: z.enum(['succeeded', 'failed_terminal', 'failed_retryable', 'uncertain']),
  result: z.optional(z.unknown()),
  error: z.optional(z.strictObject({ code: z.string(), message: z.optional(z.string()) })),
});

/** `POST /v1/operations/{id}/reconciliation`: a caller's verdict on an uncertain attempt. */
export const VerdictBody = z.strictObject({
  attempt: z.number().check(z.int(), z.gte(1, 'expected an attempt from 1')),
  verdict: z.enum(['applied', 'not_applied']),
  result: z.optional(z.unknown()),
  downstream_key: z.optional(z.string()),
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
