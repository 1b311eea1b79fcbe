import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The header the console's page sends the per-run secret in (never a cookie: no ambient authority). */
export const SECRET_HEADER = 'x-tool-ledger-console';

/** Why the guard refused a request: a code the API also uses, and a reason that names no value. */
export interface Refusal {
  code: 'unauthenticated' | 'forbidden';
  detail: string;
}

/**
 * A fresh per-run secret: 32 random bytes, base64url (43 characters), so it fits in a URL fragment.
 *
 * @example
 * ```ts
 * const secret = newSecret(); // 'm1Q…' (43 characters)
 * ```
 */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The console's own origins, the only ones a request may name in `Host` and `Origin`. Both spellings
 * of loopback are accepted because people type either; any other name is what a DNS-rebinding page
 * sends (its own host name, now resolving to 127.0.0.1), so it is refused.
 */
export function ownHosts(port: number): ReadonlySet<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
}

/**
 * Decides whether a request may reach the console. The forwarder holds an operator's credentials, so:
 *
 * - `Host` must be the console's own (DNS rebinding: the browser believes it talks to the
 *   attacker's name and sends that name);
 * - `Origin`, when the browser sends one, must be the console's own (another page, including one on
 *   another port of 127.0.0.1, which counts as the same site);
 * - API calls must also carry the secret from the printed URL in {@link SECRET_HEADER} (a custom
 *   header, which no cross-origin page can send without a preflight that the console never allows),
 *   and must not be marked by the browser as cross-site or same-site (`Sec-Fetch-Site`).
 *
 * The static page itself needs no secret: it holds none (the secret stays in the URL fragment, which
 * browsers never send), and it is useless without one.
 *
 * @example
 * ```ts
 * const refusal = checkRequest(req.headers, { port, secret, api: url.pathname.startsWith('/api/') });
 * if (refusal) return sendProblem(res, refusal.code, refusal.detail);
 * ```
 */
export function checkRequest(
  headers: IncomingHttpHeaders,
  options: { port: number; secret: string; api: boolean },
): Refusal | undefined {
  const hosts = ownHosts(options.port);
  const host = headers.host;
  if (typeof host !== 'string' || !hosts.has(host.toLowerCase())) {
    return { code: 'forbidden', detail: 'the Host header is not the console’s own address' };
  }
  const origin = headers.origin;
  if (origin !== undefined) {
    const own = [...hosts].some((h) => origin.toLowerCase() === `http://${h}`);
    if (!own) return { code: 'forbidden', detail: 'requests from another origin are refused' };
  }
  if (!options.api) return undefined;
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { code: 'forbidden', detail: 'requests from another site are refused' };
  }
  const given = headers[SECRET_HEADER];
  if (typeof given !== 'string' || !sameSecret(given, options.secret)) {
    return {
      code: 'unauthenticated',
      detail: 'the console secret is missing or wrong: open the printed URL',
    };
  }
  return undefined;
}

/** Constant-time comparison of two secrets of any length (both hashed first, so lengths leak nothing). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
