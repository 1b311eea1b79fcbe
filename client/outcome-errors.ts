/**
 * The three errors that say how an effect ended, the same vocabulary as the tool authors' errors of
 * `tool-ledger/tool`: same class names, same `code`, same meaning. Code written against either package
 * classifies the same way, because both mark their instances with one registry symbol
 * (`Symbol.for('tool-ledger.outcome-kind')`) instead of relying on `instanceof` across packages: an
 * agent can hold the client and the server package at once, or two copies of either.
 *
 * | thrown by `execute` | recorded as | next |
 * | --- | --- | --- |
 * | {@link TerminalToolError} | `failed_terminal` | settled: never runs again |
 * | {@link NotAppliedError} | `failed_retryable` | the next attempt may run (same downstream key) |
 * | {@link UncertainOutcomeError}, anything else | `uncertain` | `reconcile`, the reconciler or an operator decides |
 */

/** The registry symbol both packages mark their outcome errors with. */
const OUTCOME_KIND = Symbol.for('tool-ledger.outcome-kind');

/** How a thrown value says its effect ended. */
export type OutcomeKind = 'terminal' | 'not_applied' | 'uncertain';

/**
 * The kind an outcome error of either package carries, or `undefined` for any other value (which
 * means an unknown outcome).
 *
 * @example
 * ```ts
 * outcomeKindOf(new TerminalToolError('not_found', 'no such invoice')); // 'terminal'
 * outcomeKindOf(new Error('socket hang up'));                           // undefined
 * ```
 */
export function outcomeKindOf(value: unknown): OutcomeKind | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const kind = (value as Record<symbol, unknown>)[OUTCOME_KIND];
  return kind === 'terminal' || kind === 'not_applied' || kind === 'uncertain' ? kind : undefined;
}

/** `instanceof` for an outcome class: an instance of the same kind from any copy, or a real subclass. */
function isOutcome(kind: OutcomeKind, base: unknown, target: unknown, value: unknown): boolean {
  if (target !== base) return Function.prototype[Symbol.hasInstance].call(target as object, value);
  return outcomeKindOf(value) === kind;
}

/**
 * Known failure that will not change: the target refused the call. Recorded as `failed_terminal`. The
 * message is stored (at most 1 KiB) and shown to operators and the model: it must not contain argument
 * values.
 *
 * @example
 * ```ts
 * if (res.status === 404) throw new TerminalToolError('not_found', 'the invoice does not exist', { status: 404 });
 * ```
 */
export class TerminalToolError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about, a subclass included
    return isOutcome('terminal', TerminalToolError, this, value);
  }
  readonly [OUTCOME_KIND] = 'terminal';
  /** Stable code, `[a-z0-9_.-]{1,64}` (other characters are replaced before it is recorded). */
  readonly code: string;
  /** The target's own status where one exists (e.g. an HTTP status). */
  readonly status: number | undefined;
  constructor(code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TerminalToolError';
    this.code = code;
    this.status = options?.status;
  }
}

/**
 * Known NOT applied: nothing reached the target (a refused connection, a validation before sending).
 * Recorded as `failed_retryable`; the next attempt keeps the downstream key.
 *
 * @example
 * ```ts
 * if (error.code === 'ECONNREFUSED') throw new NotAppliedError('connect_refused', 'the target refused the connection');
 * ```
 */
export class NotAppliedError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about, a subclass included
    return isOutcome('not_applied', NotAppliedError, this, value);
  }
  readonly [OUTCOME_KIND] = 'not_applied';
  /** Stable code, `[a-z0-9_.-]{1,64}` (other characters are replaced before it is recorded). */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NotAppliedError';
    this.code = code;
  }
}

/**
 * The outcome is unknown (a timeout after sending, a 5xx, a reset): recorded as `uncertain` with the
 * code, never with the message. Any other thrown value means the same, with code `unknown_error`.
 *
 * @example
 * ```ts
 * if (res.status >= 500) throw new UncertainOutcomeError(`http_${res.status}`, 'the target failed after receiving the call');
 * ```
 */
export class UncertainOutcomeError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about, a subclass included
    return isOutcome('uncertain', UncertainOutcomeError, this, value);
  }
  readonly [OUTCOME_KIND] = 'uncertain';
  /** Stable code, `[a-z0-9_.-]{1,64}` (other characters are replaced before it is recorded). */
  readonly code: string;
  /** The target's own status where one exists. */
  readonly status: number | undefined;
  constructor(code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UncertainOutcomeError';
    this.code = code;
    this.status = options?.status;
  }
}
