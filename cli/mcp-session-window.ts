import { randomUUID } from 'node:crypto';
import { canonicalCall } from '../functions/domain/digest';

/** Seconds a session window lasts by default, and at most. */
export const SESSION_WINDOW_SECONDS = { default: 600, max: 86_400 } as const;

/** `_meta` key that marks a result whose operation ID the bridge's session window chose. */
export const MCP_META_ID_SOURCE = 'io.tool-ledger/operation-id-source';

/**
 * Operation IDs for an MCP client that cannot set one: within one bridge process (one desktop
 * session), the same tool with the same canonical arguments names the same operation until the
 * window that its first call opened ends; then it names a new one. So a model that repeats a call a
 * person would call "the same" gets the ledger's replay instead of a second effect, and a call made
 * again deliberately after the window runs again. IDs read `session:<session>:<n>`: visibly not the
 * client's own.
 *
 * The risk, taken knowingly: two calls meant as two actions (the same message sent twice on purpose)
 * within the window are one operation; the second is a replay and does nothing.
 *
 * @example
 * ```ts
 * const window = new SessionWindow(600_000);
 * window.idFor('email.send', { to: 'a@b' }) === window.idFor('email.send', { to: 'a@b' }); // true
 * ```
 */
export class SessionWindow {
  private readonly session = randomUUID();
  private readonly open = new Map<string, { id: string; until: number }>();
  private next = 1;

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The operation ID of this call in this session, or undefined when its arguments are not JSON. */
  idFor(tool: string, args: unknown): string | undefined {
    let digest: string;
    try {
      digest = canonicalCall(tool, args ?? {}).digest;
    } catch {
      return undefined; // the ledger refuses such arguments itself, with the reason
    }
    const now = this.now();
    for (const [key, entry] of this.open) if (entry.until <= now) this.open.delete(key);
    const known = this.open.get(digest);
    if (known) return known.id;
    const id = `session:${this.session}:${this.next++}`;
    this.open.set(digest, { id, until: now + this.windowMs });
    return id;
  }
}
