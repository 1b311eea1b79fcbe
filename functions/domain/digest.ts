import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { PayloadTooLargeError, ValidationError } from './errors';
import { assertIJsonValue } from './i-json';

/** Largest canonical arguments, in UTF-8 bytes (the contract, §1). */
export const MAX_CANONICAL_ARGUMENTS_BYTES = 64 * 1024;
/** Deepest nesting of arguments (the arguments object itself is level 1). */
export const MAX_ARGUMENTS_DEPTH = 32;
/** Version prefix of every digest; a new scheme would get a new prefix. */
export const DIGEST_VERSION = 'v1';

/** The canonical form of one tool call: what is stored and what is hashed. */
export interface CanonicalCall {
  /** RFC 8785 canonical JSON of the normalized arguments alone (stored on the record). */
  canonicalArguments: string;
  /** `v1:` + lowercase hex SHA-256 of the canonical JSON of `{tool, arguments}`. */
  digest: string;
}

/**
 * Computes the arguments digest of a tool call from its normalized arguments (the zod schema's
 * output). Key order and whitespace never change it; the tool name always does.
 *
 * @example
 * ```ts
 * canonicalCall('workspace.write_file', { path: 'a.txt', content: 'hi' }).digest; // 'v1:…'
 * ```
 */
export function canonicalCall(tool: string, normalizedArguments: unknown): CanonicalCall {
  assertIJsonValue(normalizedArguments, MAX_ARGUMENTS_DEPTH, '$.arguments');
  const canonicalArguments = canonicalize(normalizedArguments);
  if (canonicalArguments === undefined) throw new ValidationError('arguments are not JSON');
  if (Buffer.byteLength(canonicalArguments, 'utf8') > MAX_CANONICAL_ARGUMENTS_BYTES) {
    throw new PayloadTooLargeError(
      `canonical arguments are larger than ${MAX_CANONICAL_ARGUMENTS_BYTES} bytes`,
    );
  }
  // The canonical form of `{ tool, arguments }`, composed rather than computed again: RFC 8785 sorts
  // the two keys ("arguments" before "tool") and serializes a string as JSON.stringify does.
  const envelope = `{"arguments":${canonicalArguments},"tool":${JSON.stringify(tool)}}`;
  return { canonicalArguments, digest: digestOf(envelope) };
}

/** `v1:` + hex SHA-256 of a canonical string. */
export function digestOf(canonicalJson: string): string {
  return `${DIGEST_VERSION}:${createHash('sha256').update(canonicalJson, 'utf8').digest('hex')}`;
}

/** Shape check for a digest string supplied by a caller (approvals). */
export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && /^v1:[0-9a-f]{64}$/.test(value);
}
