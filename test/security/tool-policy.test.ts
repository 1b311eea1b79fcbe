import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type AnyTool, defineTool } from '../../functions/domain/tool';
import { useDynalite } from '../support/dynalite';
import { startWorld, type World } from './world';

/**
 * A tool's policy as an attacker or a redeploy would bend it: a read tool that claims to need an
 * approval, and a tool whose declared policy changes between the steps of one operation (a write that
 * becomes a read, an approval rule added, a schema whose defaults move). Each attack is tried against
 * the deployed handlers in one process on dynalite (test/security/world.ts).
 */

const db = useDynalite();

describe('a read tool that requires approval', () => {
  it('never runs unapproved: the deployment refuses to build with it', async () => {
    let runs = 0;
    const exportTool: AnyTool = defineTool({
      name: 'acme.export_customers',
      description: 'exports every customer',
      effect: 'read',
      requiresApproval: true,
      schema: z.object({ segment: z.string() }),
      async execute() {
        runs += 1;
        return { rows: 1000 };
      },
    });
    let world: World | undefined;
    let refusal: unknown;
    try {
      world = await startWorld(db, () => [exportTool]);
    } catch (error) {
      refusal = error;
    }
    // Before the fix the deployment built, published the tool as needing approval, and ran it at once.
    const answer = await world?.call({
      path: '/v1/operations',
      key: 'export-1',
      body: { tool: 'acme.export_customers', arguments: { segment: 'all' } },
    });
    expect({ runs, state: answer?.body?.state }).toEqual({ runs: 0, state: undefined });
    expect(String(refusal)).toContain('tool "acme.export_customers" is a read tool that requires approval');
  });
});
