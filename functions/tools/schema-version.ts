import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { toJSONSchema } from 'zod/v4/core';
import type { AnyTool } from '../domain/tool';

/**
 * A tool's published JSON Schema and its version. A module of its own: zod's JSON Schema generator is a
 * tenth of a handler bundle, and only the API (and local mode's banner) loads it, for `GET /v1/tools`,
 * MCP's `tools/list`, and the schema version its reservations store.
 */

/**
 * The JSON Schema a tool's arguments are published with (`GET /v1/tools`, MCP `tools/list`): what a
 * caller sees before the schema normalizes anything.
 *
 * @example
 * ```ts
 * inputJsonSchema(webhookPost); // { type: 'object', properties: { url: …, json: …, headers: … }, … }
 * ```
 */
export function inputJsonSchema(tool: AnyTool): Record<string, unknown> {
  return toJSONSchema(tool.schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

const versions = new WeakMap<AnyTool, string | null>();

/**
 * `sha256:` + hex SHA-256 of the RFC 8785 form of the tool's published JSON Schema, computed once per
 * tool object; undefined when the schema has no JSON Schema form.
 *
 * @example
 * ```ts
 * schemaVersion(webhookPost); // 'sha256:3f1c…'
 * ```
 */
export function schemaVersion(tool: AnyTool): string | undefined {
  let version = versions.get(tool);
  if (version === undefined) {
    try {
      const canonical = canonicalize(inputJsonSchema(tool));
      version =
        canonical === undefined
          ? null
          : `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
    } catch {
      version = null;
    }
    versions.set(tool, version);
  }
  return version ?? undefined;
}
