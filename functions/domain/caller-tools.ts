import { TENANT_PATTERN } from '../contract/table';

/**
 * Which tool names a deployment lets its tenants declare for operations they execute themselves (the
 * contract, §14), and the policy it forces on them. One setting, read by local mode from
 * `TOOL_LEDGER_CALLER_TOOLS` and rendered by the CDK construct from its `callerTools` prop:
 * comma-separated entries `[tenant/]pattern[:approval][:max_attempts=N]`, where `pattern` is a tool
 * name in which `*` stands for any run of name characters.
 *
 * ```
 * TOOL_LEDGER_CALLER_TOOLS='crm.*,payments.*:approval:max_attempts=1,acme/internal.*'
 * ```
 *
 * Unset: any name, nothing forced. Set: a tenant may declare a name only if an entry for every tenant
 * or for that tenant matches it; every matching entry's `approval` forces approval (a request may ask
 * for it anyway) and the least `max_attempts` among them caps the request's (a request may ask for
 * fewer). A request can ask for more safety, never less.
 */

/** One entry: who, which names, what is forced. */
export interface CallerToolRule {
  /** The entry applies to this tenant only; absent: every tenant. */
  tenant?: string;
  /** A tool name with `*` wildcards. */
  pattern: string;
  /** Every matching operation is reserved `awaiting_approval`. */
  requiresApproval: boolean;
  /** Cap of `max_attempts` for matching operations (1–10). */
  maxAttempts?: number;
}

/** What the deployment decides for one tenant's caller tool name. */
export interface CallerToolDecision {
  allowed: boolean;
  /** Approval forced by an entry. */
  requiresApproval: boolean;
  /** The least cap of the matching entries, if any sets one. */
  maxAttempts?: number;
}

/** Bounds of a caller operation's `max_attempts` (request and deployment cap alike). */
export const CALLER_MAX_ATTEMPTS = { min: 1, max: 10 } as const;

/** A pattern: a tool name (`[a-z][a-z0-9_.-]{0,63}`) in which `*` may stand anywhere. */
const PATTERN = /^[a-z*][a-z0-9_.*-]{0,63}$/;

/** A malformed entry; the message names where it is and what is wrong. */
export class CallerToolsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CallerToolsError';
  }
}

/**
 * Parses the setting; an absent or blank value is `undefined` (no restriction). `where` names the
 * setting in messages (the variable, or the construct's prop).
 *
 * @example
 * ```ts
 * parseCallerTools('payments.*:approval,acme/crm.*', 'TOOL_LEDGER_CALLER_TOOLS');
 * // [{ pattern: 'payments.*', requiresApproval: true }, { tenant: 'acme', pattern: 'crm.*', requiresApproval: false }]
 * ```
 */
export function parseCallerTools(spec: string | undefined, where: string): CallerToolRule[] | undefined {
  if (spec === undefined || spec.trim() === '') return undefined;
  const rules: CallerToolRule[] = [];
  spec.split(',').forEach((raw, index) => {
    const entry = raw.trim();
    const bad = (why: string) => new CallerToolsError(`${where} entry ${index + 1} (${entry}): ${why}`);
    if (entry === '') throw bad('is empty');
    const slash = entry.indexOf('/');
    const [pattern = '', ...options] = entry.slice(slash + 1).split(':');
    const rule: CallerToolRule = { pattern, requiresApproval: false };
    if (slash >= 0) rule.tenant = entry.slice(0, slash);
    for (const option of options) {
      const cap = /^max_attempts=(\d{1,9})$/.exec(option);
      if (option === 'approval') rule.requiresApproval = true;
      else if (cap) rule.maxAttempts = Number(cap[1]);
      else if (option.startsWith('max_attempts='))
        throw bad(`max_attempts must be ${CALLER_MAX_ATTEMPTS.min} to ${CALLER_MAX_ATTEMPTS.max}`);
      else throw bad(`unknown option "${option}" (options: approval, max_attempts=N)`);
    }
    const problem = callerToolRuleProblem(rule);
    if (problem !== undefined) throw bad(problem);
    rules.push(rule);
  });
  return rules;
}

/**
 * What is wrong with a rule, or undefined: its tenant, its pattern, its cap. The construct checks its
 * `callerTools` prop with it at synth, so both sides refuse the same rules.
 *
 * @example
 * ```ts
 * callerToolRuleProblem({ pattern: 'Pay.*', requiresApproval: false }); // 'the pattern must be …'
 * ```
 */
export function callerToolRuleProblem(rule: CallerToolRule): string | undefined {
  if (rule.tenant !== undefined && !TENANT_PATTERN.test(rule.tenant)) {
    return `the tenant must match ${TENANT_PATTERN.source}`;
  }
  if (!PATTERN.test(rule.pattern)) {
    return 'the pattern must be a tool name ([a-z][a-z0-9_.-]{0,63}) in which * stands for any characters';
  }
  const cap = rule.maxAttempts;
  if (
    cap !== undefined &&
    (!Number.isSafeInteger(cap) || cap < CALLER_MAX_ATTEMPTS.min || cap > CALLER_MAX_ATTEMPTS.max)
  ) {
    return `max_attempts must be ${CALLER_MAX_ATTEMPTS.min} to ${CALLER_MAX_ATTEMPTS.max}`;
  }
  return undefined;
}

/**
 * The setting's text for a list of rules (what the construct writes for the handlers).
 *
 * @example
 * ```ts
 * formatCallerTools([{ pattern: 'payments.*', requiresApproval: true, maxAttempts: 1 }]);
 * // 'payments.*:approval:max_attempts=1'
 * ```
 */
export function formatCallerTools(rules: readonly CallerToolRule[]): string {
  return rules
    .map((rule) => {
      let entry = rule.tenant === undefined ? rule.pattern : `${rule.tenant}/${rule.pattern}`;
      if (rule.requiresApproval) entry += ':approval';
      if (rule.maxAttempts !== undefined) entry += `:max_attempts=${rule.maxAttempts}`;
      return entry;
    })
    .join(',');
}

/**
 * What the deployment decides for `tenant` declaring the caller tool `name`. Without rules, anything
 * goes and nothing is forced.
 *
 * @example
 * ```ts
 * callerToolDecision(rules, 'acme', 'payments.refund'); // { allowed: true, requiresApproval: true, maxAttempts: 1 }
 * ```
 */
export function callerToolDecision(
  rules: readonly CallerToolRule[] | undefined,
  tenant: string,
  name: string,
): CallerToolDecision {
  if (rules === undefined) return { allowed: true, requiresApproval: false };
  const decision: CallerToolDecision = { allowed: false, requiresApproval: false };
  for (const rule of rules) {
    if (rule.tenant !== undefined && rule.tenant !== tenant) continue;
    if (!globMatches(rule.pattern, name)) continue;
    decision.allowed = true;
    if (rule.requiresApproval) decision.requiresApproval = true;
    if (rule.maxAttempts !== undefined)
      decision.maxAttempts = Math.min(decision.maxAttempts ?? rule.maxAttempts, rule.maxAttempts);
  }
  return decision;
}

/** Whether `name` matches `pattern`, `*` standing for any run of characters (none included). */
export function globMatches(pattern: string, name: string): boolean {
  const parts = pattern.split('*');
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (parts.length === 1) return pattern === name;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) {
    return false;
  }
  // Greedy-free left-to-right search of the middle parts between the fixed head and tail: linear in
  // the name for each part, with no backtracking regular expression.
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] ?? '';
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}
