import { createHash } from 'node:crypto';
import { InvalidOperationIdError } from './errors';

/** Longest operation ID the server accepts (the tool-ledger contract, §1). */
export const MAX_OPERATION_ID_LENGTH = 255;

const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * Throws {@link InvalidOperationIdError} unless `id` is 1 to 255 characters from 0x21 to 0x7E, so a
 * bad ID fails in the agent before a request is made.
 *
 * @example
 * ```ts
 * assertOperationId('run-42:s3:c0'); // ok
 * assertOperationId('has space');    // throws
 * ```
 */
export function assertOperationId(id: unknown): asserts id is string {
  if (
    typeof id !== 'string' ||
    id.length === 0 ||
    id.length > MAX_OPERATION_ID_LENGTH ||
    !PRINTABLE.test(id)
  ) {
    throw new InvalidOperationIdError(
      'an operation ID must be 1 to 255 printable ASCII characters (0x21-0x7E)',
    );
  }
}

/**
 * The `Idempotency-Key` header value for an ID: an RFC 8941 structured-field string, as the IETF
 * Idempotency-Key draft asks (`"run-42"`). Backslashes and quotes are escaped.
 *
 * @example
 * ```ts
 * formatIdempotencyKey('run-42'); // '"run-42"'
 * ```
 */
export function formatIdempotencyKey(id: string): string {
  assertOperationId(id);
  return `"${id.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
}

/** Where an intended action sits in the orchestrator's own state. */
export interface OperationPosition {
  /** The agent run (conversation, job, workflow execution) that owns the action. Not empty. */
  agentRunId: string;
  /**
   * The turn or step of the run that produced the tool calls: a counter the orchestrator persists
   * (`3`), or a named node (`'plan#3'`). A number and its decimal string name the same step.
   */
  step: number | string;
  /** Position of the call among the tool calls of that step's model response, from 0. */
  callIndex: number;
  /**
   * Optional namespace, e.g. a sub-agent or a retry-safe phase name, for orchestrators that run
   * more than one tool-calling loop per step.
   */
  scope?: string;
}

/** Readable IDs longer than this are shortened to a prefix and a hash. */
const READABLE_PREFIX_LENGTH = 180;

/**
 * A stable operation ID for one intended action, derived from where the action sits in the
 * orchestrator's state: (agent run, step, position of the call in the model's response).
 *
 * - Parallel tool calls in one response get different IDs (their positions differ).
 * - A regenerated or replayed response for the same step gets the same IDs, so an action that
 *   already happened is replayed instead of run again. If the regenerated call at a position has
 *   different arguments, the ledger answers 422 (conflict) instead of running a second action.
 * - Worker restarts and retries keep the ID, because it comes from state the orchestrator persists.
 *
 * Why not the model's `tool_call_id`: the provider mints it per generation. A regenerated response,
 * a replayed turn or a resumed run gets new IDs for the same intended action, so the ledger would see
 * a new operation and run the effect twice. It is also not unique across runs or providers, so two
 * different actions could share it.
 *
 * Why not a hash of the arguments: two intended actions with identical arguments (append the same
 * line twice, pay the same invoice amount twice on purpose) would collapse into one, and a retry whose
 * arguments differ slightly (a regenerated timestamp, reordered whitespace in a message) would look
 * like a new action and run twice. Identity must come from the intent's position, and the arguments
 * digest is then checked against it: same ID, different digest is a conflict.
 *
 * Format (frozen: changing it would change the IDs of runs in flight): each part is
 * percent-encoded (`encodeURIComponent`), then joined with `:` as
 * `[scope:]agentRunId:s<step>:c<callIndex>`. Since `:` never survives encoding, different
 * positions give different IDs. Results over 255 characters keep a readable prefix and end with `~`
 * and the base64url SHA-256 of the full form.
 *
 * @throws TypeError for an empty run ID, a negative or fractional index or step number, or parts with
 * lone surrogates.
 * @example
 * ```ts
 * operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 0 });               // 'run-42:s3:c0'
 * operationIdFor({ agentRunId: 'run-42', step: 3, callIndex: 1 });               // 'run-42:s3:c1'
 * operationIdFor({ agentRunId: 'run 42', step: 'plan', callIndex: 0, scope: 'a' }); // 'a:run%2042:splan:c0'
 * ```
 */
export function operationIdFor(position: OperationPosition): string {
  const { agentRunId, step, callIndex, scope } = position;
  if (typeof agentRunId !== 'string' || agentRunId.length === 0) {
    throw new TypeError('agentRunId must be a non-empty string');
  }
  if (!Number.isSafeInteger(callIndex) || callIndex < 0) {
    throw new TypeError('callIndex must be a non-negative integer');
  }
  let stepText: string;
  if (typeof step === 'number') {
    if (!Number.isSafeInteger(step) || step < 0)
      throw new TypeError('a numeric step must be a non-negative integer');
    stepText = String(step);
  } else if (typeof step === 'string' && step.length > 0) {
    stepText = encodePart(step, 'step');
  } else {
    throw new TypeError('step must be a non-negative integer or a non-empty string');
  }
  const parts = [encodePart(agentRunId, 'agentRunId'), `s${stepText}`, `c${callIndex}`];
  if (scope !== undefined) {
    if (typeof scope !== 'string' || scope.length === 0)
      throw new TypeError('scope, when given, must be non-empty');
    parts.unshift(encodePart(scope, 'scope'));
  }
  const readable = parts.join(':');
  if (readable.length <= MAX_OPERATION_ID_LENGTH) return readable;
  // A readable ID always ends with ':c<digits>'; a shortened one ends with 43 base64url characters
  // (no ':'), so the two forms can never coincide.
  const hash = createHash('sha256').update(readable, 'utf8').digest('base64url');
  return `${readable.slice(0, READABLE_PREFIX_LENGTH)}~${hash}`;
}

function encodePart(value: string, name: string): string {
  try {
    return encodeURIComponent(value);
  } catch (error) {
    // encodeURIComponent refuses exactly the strings that are not well-formed UTF-16 (a lone surrogate);
    // String.prototype.isWellFormed says the same but is ES2024, and the client keeps to ES2022.
    if (error instanceof URIError) throw new TypeError(`${name} contains a lone surrogate`);
    throw error;
  }
}

/**
 * A stable operation ID from a position a framework or workflow engine already keeps durable: a
 * workflow execution and a step name (`['exec-7f3a', 'charge-card']`), a thread and a checkpointed
 * node, a job and an item number. Use it where the position is not "step and call index of a model
 * response" (for that, {@link operationIdFor}); the same rules hold: the parts must come from state
 * that survives a retry, a restart and a replay, never from a value minted per attempt (a provider's
 * `tool_call_id`, a timestamp, a random UUID).
 *
 * Format (frozen): each part percent-encoded (`encodeURIComponent`), joined with `/`. `/` never
 * survives encoding and {@link operationIdFor} never uses it, so the two helpers' IDs never collide
 * and different part lists give different IDs (a number and its decimal string name the same part).
 * Results over 255 characters keep a 180-character
 * readable prefix and end with `~` and the base64url SHA-256 of the full form.
 *
 * @throws TypeError for fewer than two parts, an empty part, a negative or fractional number, or a
 * lone surrogate.
 * @example
 * ```ts
 * operationIdFrom(['exec-7f3a', 'charge-card']);           // 'exec-7f3a/charge-card'
 * operationIdFrom(['arn:aws:lambda:eu-west-1:1:fn', 3]);   // 'arn%3Aaws%3Alambda%3Aeu-west-1%3A1%3Afn/3'
 * ```
 */
export function operationIdFrom(parts: readonly (string | number)[]): string {
  if (!Array.isArray(parts) || parts.length < 2) {
    throw new TypeError(
      'an operation ID needs at least two parts: a durable owner (run, execution) and a position',
    );
  }
  const encoded = parts.map((part, index) => {
    if (typeof part === 'number') {
      if (!Number.isSafeInteger(part) || part < 0) {
        throw new TypeError(`part ${index} must be a non-negative integer or a non-empty string`);
      }
      return String(part);
    }
    if (typeof part !== 'string' || part.length === 0) {
      throw new TypeError(`part ${index} must be a non-negative integer or a non-empty string`);
    }
    return encodePart(part, `part ${index}`);
  });
  const readable = encoded.join('/');
  if (readable.length <= MAX_OPERATION_ID_LENGTH) return readable;
  const hash = createHash('sha256').update(readable, 'utf8').digest('base64url');
  return `${readable.slice(0, READABLE_PREFIX_LENGTH)}~${hash}`;
}
