import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { operationKey } from '../../functions/contract/keys';
import { type AnyTool, defineTool, UncertainOutcomeError } from '../../functions/domain/tool';
import { ToolRegistry } from '../../functions/tools/registry';
import { schemaVersion } from '../../functions/tools/schema-version';
import { checkTrace } from '../../scripts/verify/trace-check';
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

/** A tool whose policy a test can change between steps, as a redeploy or an upstream's new listing would. */
class ShiftingTool {
  effects = 0;
  constructor(
    private readonly world: () => World,
    readonly name: string,
  ) {}

  /** Deploys the tool with `fields` (every other tool of the deployment stays). */
  deploy(fields: Partial<AnyTool> = {}): void {
    const tool = defineTool({
      name: this.name,
      description: 'counts its effects',
      effect: 'write',
      schema: z.object({ label: z.string() }),
      execute: async () => {
        this.effects += 1;
        return { effects: this.effects };
      },
      ...fields,
    });
    const runtime = this.world().runtime;
    const others = runtime.deps.tools.list().filter((t) => t.name !== this.name);
    runtime.deps.tools = new ToolRegistry([...others, tool]);
  }
}

const APPROVER = 'approver-a';

describe('a tool whose policy changes between the steps of one operation', () => {
  let world: World;
  let seq = 0;
  const key = (label: string) => `policy-${label}-${++seq}`;
  const call = (id: string, tool: string, args: unknown, headers: [string, string][] = []) =>
    world.call({ path: '/v1/operations', key: id, body: { tool, arguments: args }, headers });
  const get = async (id: string) => (await world.call({ path: `/v1/operations/${id}` })).body;
  /** The reconciler's next pass after its staleness and backoff windows, then the executor. */
  const laterPasses = async (times: number) => {
    for (let i = 0; i < times; i++) {
      world.advance(10 * 60_000);
      await world.reconcile();
      await world.deliver();
    }
  };

  beforeAll(async () => {
    world = await startWorld(db, () => [], { TOOL_LEDGER_RETRY_BASE_MS: '100' });
    world.runtime.deps.schemaVersion = schemaVersion; // as the API's entry sets it (functions/handlers/api.ts)
  });

  afterEach(() => {
    // Every transition the handlers logged is one the protocol's model allows.
    expect(checkTrace(world.transitions).rejected).toEqual([]);
  });

  it('a retry of a succeeded write after the tool became a read is a replay, never a second effect', async () => {
    const tool = new ShiftingTool(() => world, 'acme.notify');
    tool.deploy();
    const id = key('write-then-read');
    const first = await call(id, 'acme.notify', { label: 'x' });
    expect(first.body).toMatchObject({ state: 'succeeded', replayed: false, result: { effects: 1 } });
    // The policy that governed the reservation is stored on the record.
    expect((await world.runtime.deps.store.get(operationKey('acme', id)))?.policy).toEqual({
      execution: 'ledger',
      effect: 'write',
      requires_approval: false,
      downstream_idempotent: false,
      timeout_ms: 10_000,
      schema_version: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    tool.deploy({ effect: 'read' });
    const retry = await call(id, 'acme.notify', { label: 'x' });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ state: 'succeeded', replayed: true, result: { effects: 1 } });
    expect(retry.headers['Idempotent-Replayed'] ?? retry.headers['idempotent-replayed']).toBe('true');
    // The same key with other arguments is the write's conflict, not a second read.
    expect((await call(id, 'acme.notify', { label: 'y' })).body).toMatchObject({
      code: 'idempotency_key_reused',
    });
    expect(tool.effects).toBe(1);
  });

  it('an approved write whose tool became a read is claimed by the executor, never run unclaimed: it goes to an operator', async () => {
    const tool = new ShiftingTool(() => world, 'acme.purge');
    tool.deploy({ requiresApproval: true });
    const id = key('approved-then-read');
    const held = await call(id, 'acme.purge', { label: 'all' });
    expect(held.body).toMatchObject({ state: 'awaiting_approval' });
    tool.deploy({ effect: 'read' });
    const approval = await world.call({
      path: `/v1/operations/${id}/approval`,
      token: APPROVER,
      body: { decision: 'approve', arguments_digest: held.body.arguments_digest },
    });
    expect(approval.body).toMatchObject({ state: 'queued' });
    await world.deliver();
    await laterPasses(3);
    expect(tool.effects).toBe(0);
    expect(await get(id)).toMatchObject({
      state: 'needs_reconciliation',
      attempt: 0,
      action_required: 'operator_resolution',
      error: { code: 'policy_changed' },
    });
    expect(JSON.stringify((await get(id)).error)).toContain('effect changed from write to read');
  });

  it('a write reserved without approval is not run once the tool requires one: an operator decides', async () => {
    const tool = new ShiftingTool(() => world, 'acme.transfer');
    tool.deploy();
    const id = key('approval-added');
    const queued = await call(id, 'acme.transfer', { label: 'x' }, [['Prefer', 'respond-async']]);
    expect(queued.body).toMatchObject({ state: 'queued' });
    tool.deploy({ requiresApproval: true });
    await world.deliver();
    expect(tool.effects).toBe(0);
    expect(await get(id)).toMatchObject({ state: 'needs_reconciliation', error: { code: 'policy_changed' } });
  });

  it('a schema change that changes normalized output (a new defaulted field) no longer leaves a queued record waiting forever', async () => {
    const tool = new ShiftingTool(() => world, 'acme.greet');
    tool.deploy({ schema: z.object({ name: z.string() }) });
    const id = key('default-added');
    const queued = await call(id, 'acme.greet', { name: 'ada' }, [['Prefer', 'respond-async']]);
    expect(queued.body).toMatchObject({ state: 'queued' });
    // The stored arguments now normalize to { greeting: 'hi', name: 'ada' }: another digest.
    tool.deploy({ schema: z.object({ name: z.string(), greeting: z.string().default('hi') }) });
    await world.deliver();
    await laterPasses(2);
    expect(tool.effects).toBe(0);
    expect(await get(id)).toMatchObject({ state: 'needs_reconciliation', error: { code: 'policy_changed' } });
  });

  it('a schema change that refuses the stored arguments hands the operation to an operator instead of the DLQ', async () => {
    const tool = new ShiftingTool(() => world, 'acme.tag');
    tool.deploy();
    const id = key('schema-refuses');
    await call(id, 'acme.tag', { label: 'x' }, [['Prefer', 'respond-async']]);
    tool.deploy({ schema: z.object({ label: z.string(), colour: z.string() }) });
    expect(await world.deliver()).toEqual([]);
    expect(tool.effects).toBe(0);
    expect(await get(id)).toMatchObject({ state: 'needs_reconciliation', error: { code: 'policy_changed' } });
  });

  it('an uncertain attempt reserved as not downstream-idempotent is never retried because the tool now says it is', async () => {
    let effects = 0;
    const flaky = (downstreamIdempotent: boolean): AnyTool =>
      defineTool({
        name: 'acme.charge',
        description: 'applies, then loses its answer',
        effect: 'write',
        schema: z.object({ label: z.string() }),
        downstreamIdempotent: () => downstreamIdempotent,
        async execute() {
          effects += 1;
          throw new UncertainOutcomeError('timeout', 'the answer was lost');
        },
      });
    const deployCharge = (idempotent: boolean) => {
      const others = world.runtime.deps.tools.list().filter((t) => t.name !== 'acme.charge');
      world.runtime.deps.tools = new ToolRegistry([...others, flaky(idempotent)]);
    };
    deployCharge(false);
    const id = key('idempotence-claimed-later');
    expect((await call(id, 'acme.charge', { label: 'x' })).body).toMatchObject({ state: 'uncertain' });
    deployCharge(true);
    await laterPasses(3);
    expect(effects).toBe(1);
    expect(await get(id)).toMatchObject({ state: 'needs_reconciliation', attempt: 1 });
  });

  it('the executor runs a read tool as a ledger operation: claimed and recorded, an unknown outcome retried, never left uncertain', async () => {
    let runs = 0;
    const lookup: AnyTool = defineTool({
      name: 'acme.lookup',
      description: 'reads, and loses its first answer',
      effect: 'read',
      schema: z.object({ label: z.string() }),
      async execute() {
        runs += 1;
        if (runs === 1) throw new UncertainOutcomeError('timeout', 'the answer was lost');
        return { runs };
      },
    });
    const others = world.runtime.deps.tools.list().filter((t) => t.name !== 'acme.lookup');
    world.runtime.deps.tools = new ToolRegistry([...others, lookup]);
    const id = key('queued-read');
    const message = JSON.stringify({
      operation_id: id,
      tenant: 'acme',
      tool: 'acme.lookup',
      arguments: { label: 'x' },
    });
    // SQS redelivers the failed message (reported failed); here the test hands it over again.
    expect(await world.deliver([message])).toHaveLength(1);
    expect(await get(id)).toMatchObject({
      state: 'failed_retryable',
      attempt: 1,
      error: { code: 'timeout' },
    });
    await world.deliver([message]);
    expect(await get(id)).toMatchObject({ state: 'succeeded', attempt: 2, result: { runs: 2 } });
    expect((await world.runtime.deps.store.get(operationKey('acme', id)))?.policy).toMatchObject({
      execution: 'ledger',
      effect: 'read',
    });
  });

  it('a record reserved before policies were stored is governed by the tool as it is now, as before', async () => {
    const tool = new ShiftingTool(() => world, 'acme.legacy');
    tool.deploy();
    const id = key('legacy');
    await call(id, 'acme.legacy', { label: 'x' }, [['Prefer', 'respond-async']]);
    // What a record written before this version looks like: no `policy`.
    const pk = `acme#${id}`;
    await world.db.send(
      new UpdateItemCommand({
        TableName: world.table,
        Key: { pk: { S: pk }, sk: { S: 'op' } },
        UpdateExpression: 'REMOVE #p',
        ExpressionAttributeNames: { '#p': 'policy' },
      }),
    );
    tool.deploy({ effect: 'read' });
    await world.deliver();
    expect(tool.effects).toBe(1);
    expect(await get(id)).toMatchObject({ state: 'succeeded', attempt: 1 });
  });
});
