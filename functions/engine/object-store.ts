import type { PayloadEncoding } from '../domain/payload';

/**
 * What the engine needs from an object store, and nothing of which one it is: the port the engine
 * owns and ledger/ implements on S3 (functions/ledger/s3-object-store.ts; in local mode the same code
 * against an S3-compatible emulator). It keeps whole results too large for their record
 * (engine/payloads.ts). The store promises nothing about what it returns: every read is checked by
 * the caller against the reference its record holds.
 */

/** An object's bytes and how they encode its JSON text. */
export interface StoredObject {
  bytes: Uint8Array;
  /** As the writer declared it; absent when the object carries no declaration. */
  encoding?: PayloadEncoding;
}

/**
 * An object store.
 *
 * @example
 * ```ts
 * await objects.put('results/acme/…/1-<sha>.json', bytes, 'br');
 * const back = await objects.get('results/acme/…/1-<sha>.json'); // undefined when it is gone
 * ```
 */
export interface ObjectStore {
  /** Writes (or overwrites) `key`. Resolves once the object is durable; throws otherwise. */
  put(key: string, bytes: Uint8Array, encoding: PayloadEncoding): Promise<void>;
  /** The object at `key`, or undefined when there is none. Throws when the store cannot answer. */
  get(key: string): Promise<StoredObject | undefined>;
  /** Removes `key`; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
}
