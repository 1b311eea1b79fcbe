import { SettingError } from '../contract/environment';

/**
 * Per-tenant request limits of the HTTP front door: one tenant's runaway agent must not take the
 * stage's whole limit (shared by every tenant) from the others. The front door asks the limiter once
 * per authenticated request, before any ledger work; the limiter counts per tenant and per second in
 * storage every API instance shares. Counting fails open: the limit is for fairness between tenants,
 * never a guarantee of the ledger, so a request is not refused because the count could not be written.
 */

/** Decides whether one more request of a tenant fits in the current second. */
export interface TenantRateLimiter {
  /**
   * Counts a request of `tenant` at `nowMs` and answers whether it is within the limit (`limit` is the
   * tenant's requests per second, for the refusal's message).
   */
  admit(tenant: string, nowMs: number): Promise<{ admitted: boolean; limit: number }>;
}

/** Requests per second by tenant; `*` applies to every tenant not named. */
export type TenantRateLimits = Readonly<Record<string, number>>;

/**
 * Parses `TOOL_LEDGER_TENANT_RATE_LIMITS` (a JSON object of positive whole numbers), or returns
 * undefined when it is unset (no per-tenant limit).
 *
 * @example
 * ```ts
 * parseTenantRateLimits('{"*":400,"acme":800}', 'TOOL_LEDGER_TENANT_RATE_LIMITS'); // { '*': 400, acme: 800 }
 * ```
 */
export function parseTenantRateLimits(
  raw: string | undefined,
  variable: string,
): TenantRateLimits | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new SettingError(variable, `${variable} must be a JSON object of requests per second by tenant`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SettingError(variable, `${variable} must be a JSON object of requests per second by tenant`);
  }
  for (const limit of Object.values(value)) {
    if (!Number.isInteger(limit) || (limit as number) < 1) {
      throw new SettingError(
        variable,
        `${variable} limits must be whole numbers of requests per second, at least 1`,
      );
    }
  }
  return value as TenantRateLimits;
}

/** The limit of one tenant, or undefined when neither it nor `*` is limited. */
export function limitOf(limits: TenantRateLimits, tenant: string): number | undefined {
  return Object.hasOwn(limits, tenant) ? limits[tenant] : limits['*'];
}
