import { SETTINGS } from '../contract/environment';

/**
 * Who may send work for which tenant (SPEC §6). A work queue's tenant binding says which tenants the
 * queue carries; against a hostile producer that is not enough, because every producer of one queue
 * could name any of them. On AWS each message carries its sender (the SQS `SenderId` system attribute:
 * `AROA…:<session>` for an assumed role, `AIDA…` for a user), which no producer can forge, so the
 * executor checks the message's tenant against the tenants its sender may act for.
 *
 * The environment holds the binding as JSON, an array of `{"id": "<IAM unique ID>", "tenants":
 * ["acme"] | "*"}`: `*` is for the stack's own API and reconciler roles, which enqueue for every tenant.
 * A session's name is chosen by whoever assumes the role, so only the unique ID before `:` counts.
 */

/** One entry of the binding, as the construct writes it. */
export interface SenderEntry {
  /** IAM unique ID of a role (`AROA…`) or user (`AIDA…`), or an account ID for the root user. */
  id: string;
  /** Tenants it may send for, or `*` for every tenant the queue carries. */
  tenants: readonly string[] | '*';
}

/**
 * The senders of a work queue and the tenants each may act for. Unknown senders may act for no tenant:
 * a binding that was never configured refuses every message (fail closed).
 *
 * @example
 * ```ts
 * const senders = SenderBinding.parse('[{"id":"AROAEXAMPLE","tenants":["acme"]}]');
 * senders.mayActFor('AROAEXAMPLE:orchestrator-7', 'acme'); // true
 * senders.mayActFor('AROAEXAMPLE:orchestrator-7', 'globex'); // false
 * ```
 */
export class SenderBinding {
  private readonly bySender = new Map<string, ReadonlySet<string> | '*'>();

  constructor(entries: readonly SenderEntry[]) {
    for (const entry of entries) {
      const previous = this.bySender.get(entry.id);
      if (entry.tenants === '*' || previous === '*') {
        this.bySender.set(entry.id, '*');
      } else {
        this.bySender.set(entry.id, new Set([...(previous ?? []), ...entry.tenants]));
      }
    }
  }

  /** Parses the environment's JSON; throws on anything but a well-formed binding (a cold start fails). */
  static parse(raw: string | undefined): SenderBinding {
    if (raw === undefined || raw === '') return new SenderBinding([]);
    const value = JSON.parse(raw) as unknown;
    if (!Array.isArray(value) || !value.every(isEntry)) {
      throw new Error(
        `${SETTINGS.queueSenders.name} must be a JSON array of {"id": "<IAM unique ID>", "tenants": [..] | "*"}`,
      );
    }
    return new SenderBinding(value);
  }

  /** Whether the sender (an SQS `SenderId`) may send work for `tenant`. */
  mayActFor(senderId: string | undefined, tenant: string): boolean {
    if (senderId === undefined || senderId === '') return false;
    const tenants = this.bySender.get(uniqueIdOf(senderId));
    return tenants === '*' || (tenants?.has(tenant) ?? false);
  }
}

/** `AROAEXAMPLE:session` → `AROAEXAMPLE`: the session name is the caller's choice, the role's ID is not. */
function uniqueIdOf(senderId: string): string {
  const colon = senderId.indexOf(':');
  return colon === -1 ? senderId : senderId.slice(0, colon);
}

function isEntry(value: unknown): value is SenderEntry {
  if (typeof value !== 'object' || value === null) return false;
  const { id, tenants } = value as Record<string, unknown>;
  if (typeof id !== 'string' || id === '' || id.includes(':')) return false;
  return tenants === '*' || (Array.isArray(tenants) && tenants.every((t) => typeof t === 'string'));
}
