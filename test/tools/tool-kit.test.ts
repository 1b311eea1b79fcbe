import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import * as toolKit from '../../functions/tool-kit';
import { awsDefaultTools, builtinTools, defineTool, type ToolFactory } from '../../functions/tool-kit';
import { ToolRegistry } from '../../functions/tools/registry';

/** The `tool-ledger/tool` entry: what a team's own tools module can build from, without a fork. */

const env = { workspaceRoot: '/tmp/ws', webhookAllow: ['https://hooks.example'], local: false };

describe('the tool author entry (tool-ledger/tool)', () => {
  it('offers the shipped factories, so a team keeps the shipped tools next to its own', () => {
    const ticket = defineTool({
      name: 'acme.create_ticket',
      description: 'Opens a ticket',
      effect: 'write',
      schema: z.strictObject({ title: z.string() }),
      execute: async () => ({ id: 'T-1' }),
    });
    const onAws: ToolFactory = (e) => [...awsDefaultTools(e), ticket];
    const everything: ToolFactory = (e) => [...builtinTools(e), ticket];
    expect(new ToolRegistry(onAws(env)).list().map((t) => t.name)).toEqual([
      'webhook.post',
      'acme.create_ticket',
    ]);
    expect(new ToolRegistry(everything(env)).list().map((t) => t.name)).toEqual([
      'workspace.write_file',
      'workspace.append_line',
      'workspace.delete_file',
      'webhook.post',
      'acme.create_ticket',
    ]);
  });

  it('exports exactly what the docs document for tool authors', () => {
    expect(Object.keys(toolKit).sort()).toEqual(
      [
        'NotAppliedError',
        'TOOL_DEFAULTS',
        'TOOL_NAME_PATTERN',
        'TerminalToolError',
        'UncertainOutcomeError',
        'awsDefaultTools',
        'builtinTools',
        'defineTool',
      ].sort(),
    );
  });
});
