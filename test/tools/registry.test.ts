import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool } from '../../functions/domain/tool';
import { ToolRegistry } from '../../functions/tools/registry';

/** What the registry refuses before a deployment can serve a tool. */

const tool = (fields: { name: string; effect: 'read' | 'write'; requiresApproval?: boolean }) =>
  defineTool({
    description: fields.name,
    schema: z.object({ id: z.string() }),
    execute: async () => ({}),
    ...fields,
  });

describe('the tool registry', () => {
  it('refuses a read tool that requires approval, naming the tool and what to change', () => {
    expect(
      () => new ToolRegistry([tool({ name: 'acme.export', effect: 'read', requiresApproval: true })]),
    ).toThrow(
      'tool "acme.export" is a read tool that requires approval: reads run at once and are never held for an approver; declare it effect: \'write\' (every call then waits for an approval) or drop requiresApproval',
    );
  });

  it('accepts reads without approval and writes with it', () => {
    const registry = new ToolRegistry([
      tool({ name: 'acme.lookup', effect: 'read' }),
      tool({ name: 'acme.delete', effect: 'write', requiresApproval: true }),
      tool({ name: 'acme.lookup2', effect: 'read', requiresApproval: false }),
    ]);
    expect(registry.list().map((t) => t.name)).toEqual(['acme.lookup', 'acme.delete', 'acme.lookup2']);
  });

  it('refuses a name twice and an invalid name (unchanged)', () => {
    expect(
      () =>
        new ToolRegistry([tool({ name: 'a.b', effect: 'write' }), tool({ name: 'a.b', effect: 'write' })]),
    ).toThrow('tool a.b is registered twice');
    expect(() => new ToolRegistry([tool({ name: 'A', effect: 'write' })])).toThrow('invalid tool name "A"');
  });
});
