// Core types: a tool's schema may be built with classic zod (`zod`) or zod's smaller entry (`zod/mini`).
import type * as z from 'zod/v4/core';

/** What a tool may log: identities and codes only, never arguments or results. */
export interface ToolLogger {
  info(message: string, fields?: Record<string, string | number | boolean>): void;
  warn(message: string, fields?: Record<string, string | number | boolean>): void;
}

/** What `execute` receives besides its arguments. */
export interface ToolContext {
  operationId: string;
  tenant: string;
  /**
   * Key for targets with their own idempotency (the contract, §1): the same for every attempt of this
   * operation, new for a later operation that reuses the operation ID after the record expired.
   * Anything a tool keeps per operation (markers, outboxes) belongs under this key, not the ID.
   */
  downstreamKey: string;
  attempt: number;
  /** Aborted at the hard deadline, which ends before the lease and the Lambda's remaining time. */
  signal: AbortSignal;
  logger: ToolLogger;
}

/** What `reconcile` receives: like execute's context, for the attempt that may have applied. */
export type ReconcileContext = ToolContext;

/** The answer of `reconcile`: did the effect of this operation happen? */
export type ReconcileVerdict =
  | { status: 'applied'; result: unknown }
  | { status: 'not_applied' }
  | { status: 'unknown' };

/**
 * One tool: a name, a schema, an effect. `execute` returns on success or throws
 * {@link TerminalToolError} (known failure), {@link NotAppliedError} (known not started) or anything
 * else (outcome unknown → `uncertain`).
 *
 * @example
 * ```ts
 * export const echo = defineTool({
 *   name: 'demo.echo', description: 'Echoes', effect: 'read',
 *   schema: z.object({ text: z.string() }),
 *   async execute(args) { return { text: args.text }; },
 * });
 * ```
 */
export interface Tool<S extends z.$ZodType = z.$ZodType> {
  /** `[a-z][a-z0-9_.-]{0,63}`; part of the digest. */
  name: string;
  /** Shown to agents and models. */
  description: string;
  /** Validates and normalizes arguments; published as JSON Schema. */
  schema: S;
  /** `write`: full ledger; `read`: identity + a short-lived result cache, no reconciliation. */
  effect: 'write' | 'read';
  /** Performs the effect; must honour `ctx.signal`. */
  execute(args: z.output<S>, ctx: ToolContext): Promise<unknown>;
  /** Asks the target whether the effect happened. */
  reconcile?(args: z.output<S>, ctx: ReconcileContext): Promise<ReconcileVerdict>;
  /** Reserve as `awaiting_approval`. @default false */
  requiresApproval?: boolean;
  /** The target dedupes on the downstream key for these arguments. @default () => false */
  downstreamIdempotent?(args: z.output<S>): boolean;
  /** Hard deadline of one attempt, ms. @default 10000 */
  timeoutMs?: number;
  /**
   * Hard deadline of one `reconcile` call, ms: a status check is usually far quicker than the effect,
   * and a reconciler pass (and an operator's pass inside the API's 29 s) starts a check only while
   * this deadline still fits in it. The construct refuses, at synth, one that cannot fit.
   * @default timeoutMs
   */
  reconcileTimeoutMs?: number;
  /** @default 3 */
  maxAttempts?: number;
  /** Retention of the terminal record, seconds. @default TOOL_LEDGER_RETENTION_SECONDS (30 days) */
  retention?: number;
  /** Returns the JSON stored and returned (at most 32 KiB). @default identity */
  sanitizeResult?(result: unknown, args: z.output<S>): unknown;
  /** A coarse label of the target for logs (`filesystem`, `http`). @default the name's first segment */
  targetClass?: string;
  /**
   * Hints published to MCP clients in `tools/list`, over the ones derived from the tool (`readOnlyHint`
   * for reads, `destructiveHint` for tools that need approval). They inform clients only: the ledger's
   * policy follows `effect` and `requiresApproval`. @default derived
   */
  annotations?: ToolAnnotations;
}

/** MCP tool annotations (hints for clients; never trusted for policy unless the deployment says so). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool of any schema, as the registry holds it. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds tools of every argument type
export type AnyTool = Tool<any>;

/** Identity helper that keeps the schema's inferred types for `execute` and `reconcile`. */
export function defineTool<S extends z.$ZodType>(tool: Tool<S>): Tool<S> {
  return tool;
}

/** Resolved per-tool settings with defaults applied. */
export const TOOL_DEFAULTS = { timeoutMs: 10_000, maxAttempts: 3 } as const;

/** The deadline of one `reconcile` call of a tool, ms (its own, else its attempt's). */
export function reconcileTimeoutOf(tool: Pick<AnyTool, 'timeoutMs' | 'reconcileTimeoutMs'>): number {
  return tool.reconcileTimeoutMs ?? tool.timeoutMs ?? TOOL_DEFAULTS.timeoutMs;
}

/**
 * Marks the three outcome errors with their kind under a registry symbol. A team's tools import these
 * classes from the published `tool-ledger/tool` entry while the handlers are bundled from the package's
 * source, so a deployment can hold two copies of each class; `instanceof` must recognise both, or a
 * terminal failure thrown by a tool would be taken for an unknown outcome.
 */
const OUTCOME_KIND = Symbol.for('tool-ledger.outcome-kind');

type OutcomeKind = 'terminal' | 'not_applied' | 'uncertain';

/** `instanceof` for an outcome error class: any copy's instance of the same kind, or a real subclass. */
function isOutcome(kind: OutcomeKind, base: unknown, target: unknown, value: unknown): boolean {
  if (target !== base) return Function.prototype[Symbol.hasInstance].call(target as object, value);
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[OUTCOME_KIND] === kind
  );
}

/**
 * Known failure that will not change: the target rejected the call. Stored as `failed_terminal`.
 * The message must not contain argument values.
 *
 * @example
 * ```ts
 * if (response.status === 404) throw new TerminalToolError('not_found', 'the repository does not exist', { status: 404 });
 * ```
 */
export class TerminalToolError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about, a subclass included
    return isOutcome('terminal', TerminalToolError, this, value);
  }
  readonly [OUTCOME_KIND] = 'terminal';
  readonly code: string;
  readonly status: number | undefined;
  constructor(code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TerminalToolError';
    this.code = code;
    this.status = options?.status;
  }
}

/**
 * Known NOT applied: nothing left this machine. Stored as `failed_retryable`.
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
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NotAppliedError';
    this.code = code;
  }
}

/** Tool names: part of the digest, so a schema change that changes output must change the name. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

/**
 * The outcome is unknown (a timeout after sending, a 5xx, a reset): stored as `uncertain` with the
 * code, and left to the reconciler. Any other thrown value means the same, with code `unknown_error`.
 */
export class UncertainOutcomeError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class instanceof was asked about, a subclass included
    return isOutcome('uncertain', UncertainOutcomeError, this, value);
  }
  readonly [OUTCOME_KIND] = 'uncertain';
  readonly code: string;
  readonly status: number | undefined;
  constructor(code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UncertainOutcomeError';
    this.code = code;
    this.status = options?.status;
  }
}
