import { describe, expect, it } from 'vitest';
import { canonicalCall } from '../../functions/domain/digest';
import { builtinTools } from '../../functions/tools/builtin';
import { describeTools } from '../../functions/tools/describe';
import { type ToolEnvironment, ToolRegistry } from '../../functions/tools/registry';

const env: ToolEnvironment = {
  workspaceRoot: '/tmp/tool-ledger-builtin-test',
  webhookAllow: ['http://127.0.0.1', 'http://localhost'],
  local: true,
};

type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: unknown;
  propertyNames?: { pattern?: string };
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  description?: string;
};

describe('builtinTools', () => {
  it('registers the four shipped tools under valid, unique names', () => {
    const registry = new ToolRegistry(builtinTools(env));
    expect(registry.list().map((tool) => tool.name)).toEqual([
      'workspace.write_file',
      'workspace.append_line',
      'workspace.delete_file',
      'webhook.post',
    ]);
    expect(registry.list().every((tool) => tool.effect === 'write')).toBe(true);
  });

  it('publishes JSON Schemas that refuse unknown keys, with flags (GET /v1/tools)', () => {
    const described = describeTools(new ToolRegistry(builtinTools(env)));
    const byName = Object.fromEntries(described.map((d) => [d.name, d]));
    expect(JSON.parse(JSON.stringify(described))).toEqual(described);
    for (const description of described) {
      const schema = description.input_schema as JsonSchema;
      expect(schema.type, description.name).toBe('object');
      expect(schema.additionalProperties, description.name).toBe(false);
      expect(description.description.length).toBeGreaterThan(20);
    }
    expect(byName['workspace.delete_file']?.requires_approval).toBe(true);
    expect(byName['workspace.write_file']?.requires_approval).toBe(false);

    const write = byName['workspace.write_file']?.input_schema as JsonSchema;
    expect(write.required?.sort()).toEqual(['content', 'path']);
    expect(write.properties?.path).toMatchObject({ type: 'string', minLength: 1, maxLength: 1024 });

    const append = byName['workspace.append_line']?.input_schema as JsonSchema;
    expect(append.properties?.line?.pattern).toBe('^[^\\r\\n]*$');

    const webhook = byName['webhook.post']?.input_schema as JsonSchema;
    expect(webhook.required?.sort()).toEqual(['json', 'url']);
    expect(webhook.properties?.url).toMatchObject({ type: 'string', maxLength: 2048 });
    expect(webhook.properties?.headers?.propertyNames?.pattern).toBe('^[xX]-[a-zA-Z0-9-]+$');
  });

  it('gives equal digests to differently spelled but equal calls', () => {
    const registry = new ToolRegistry(builtinTools(env));
    const digest = (tool: string, args: unknown) =>
      canonicalCall(tool, registry.get(tool).schema.parse(args)).digest;
    expect(digest('workspace.write_file', { path: 'a//b/./c.txt', content: 'x' })).toBe(
      digest('workspace.write_file', { content: 'x', path: 'a/b/c.txt' }),
    );
    expect(
      digest('webhook.post', { url: 'HTTP://127.0.0.1:80/h#f', json: { b: 1, a: 2 }, headers: {} }),
    ).toBe(digest('webhook.post', { url: 'http://127.0.0.1/h', json: { a: 2, b: 1 } }));
    expect(digest('webhook.post', { url: 'http://127.0.0.1/h', json: 1, headers: { 'X-A': 'v' } })).toBe(
      digest('webhook.post', { url: 'http://127.0.0.1/h', json: 1, headers: { 'x-a': ' v ' } }),
    );
  });

  it('fails at build time on a malformed allow-list entry', () => {
    expect(() => builtinTools({ ...env, webhookAllow: ['http://127.0.0.1/path'] })).toThrow(
      /allowed origin #1/,
    );
    expect(() => builtinTools({ ...env, webhookIdempotentOrigins: ['ftp://x'] })).toThrow(
      /allowed origin #1/,
    );
  });
});
