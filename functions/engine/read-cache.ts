/**
 * The read cache as the engine's read-tool path (engine/read-tool-path.ts) sees it: run a read at
 * most once per operation ID while its result is kept, answer repeats from what was kept, and refuse
 * the same ID with other arguments. Part of the storage port ({@link OperationStore.readCache}); the
 * DynamoDB implementation is Powertools idempotency on the ledger table (functions/ledger/read-cache.ts).
 */

/** What identifies a read: the tenant and operation ID are its key, the digest is checked on a repeat. */
export interface ReadKey {
  tenant: string;
  operation_id: string;
  digest: string;
}

/** What is kept of a read that ran: enough to answer a repeat. */
export interface StoredRead {
  result: string;
  outcome_code: string;
  arguments_digest: string;
  requested_by: string;
  created_at: string;
  completed_at: string;
  agent_run_id?: string;
  /** The run's own reservation; absent in reads cached before reads had one. */
  reservation_id?: string;
}

/** How one tool's reads are cached. */
export interface ReadCacheOptions {
  /** The tool: each tool has its own cache lifetime. */
  tool: string;
  /** How long a result is kept, seconds. */
  cacheSeconds: number;
  /**
   * Epoch ms until which a read marked in progress holds its key (its deadline plus the lease grace):
   * a read whose process died is run again after that, not after the whole cache lifetime.
   */
  lockUntil: number;
}

/** What became of one call. */
export type ReadCacheAnswer =
  /** This call ran the read, and its result is kept. */
  | { kind: 'ran'; stored: StoredRead }
  /** The result was kept already (this process's memory, or the table). */
  | { kind: 'replayed'; stored: StoredRead; expiresAt: number | undefined }
  /** The key is kept with other arguments: the digest that is kept, when known. */
  | { kind: 'conflict'; storedDigest: string | undefined }
  /** Another call is running the read now. */
  | { kind: 'in_progress' };

/**
 * A cache of read results by operation ID.
 *
 * @example
 * ```ts
 * const answer = await deps.store.readCache.runOnce(key, { tool: 'files.read', cacheSeconds: 60, lockUntil }, run);
 * if (answer.kind === 'replayed') console.log(answer.stored.result);
 * ```
 */
export interface ReadCache {
  /**
   * Runs `read` unless the key is kept or in progress. When `read` throws, nothing is kept (the next
   * call runs it again) and the error is thrown on; a cache that cannot be reached throws
   * `LedgerUnavailableError` (nothing durable was decided).
   */
  runOnce(key: ReadKey, options: ReadCacheOptions, read: () => Promise<StoredRead>): Promise<ReadCacheAnswer>;
}
