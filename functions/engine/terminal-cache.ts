import type { OperationRecord } from '../domain/operation';
import { isTerminal } from '../domain/states';

/**
 * A process-local cache of terminal records. Terminal records are immutable until they expire, so a
 * warm Lambda can replay (or reject a conflicting retry) with no DynamoDB call at all. Entries are
 * dropped at their `expires_at`, after which the key must reach the ledger again (it may start a new
 * operation). Bounded, least recently used first out.
 *
 * @example
 * ```ts
 * const cache = new TerminalCache(1000);
 * cache.put(record);
 * cache.get(record.pk, Date.now()); // record, while it has not expired
 * ```
 */
export class TerminalCache {
  private readonly entries = new Map<string, OperationRecord>();

  constructor(private readonly maxEntries = 1000) {}

  /** The cached terminal record of a key, unless it has expired by `now` (epoch ms). */
  get(pk: string, now: number): OperationRecord | undefined {
    const record = this.entries.get(pk);
    if (!record) return undefined;
    if (record.expires_at === undefined || record.expires_at < Math.floor(now / 1000)) {
      this.entries.delete(pk);
      return undefined;
    }
    this.entries.delete(pk);
    this.entries.set(pk, record);
    return record;
  }

  /** Remembers a record if it is terminal; ignores every other state. */
  put(record: OperationRecord): void {
    if (!isTerminal(record.state) || record.expires_at === undefined) return;
    this.entries.delete(record.pk);
    this.entries.set(record.pk, record);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** Number of cached records. */
  get size(): number {
    return this.entries.size;
  }
}
