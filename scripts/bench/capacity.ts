import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { z } from 'zod';
import { operationKey } from '../../functions/contract/keys';
import { LEDGER_TABLE } from '../../functions/contract/table';
import { type AnyTool, defineTool, UncertainOutcomeError } from '../../functions/domain/tool';
import { decideApproval } from '../../functions/engine/approval';
import { newRequest } from '../../functions/engine/ledger-deps';
import { reconcilePass } from '../../functions/engine/reconcile';
import { submitOperation } from '../../functions/engine/submit-operation';
import { TerminalCache } from '../../functions/engine/terminal-cache';
import { LedgerStore } from '../../functions/ledger/ledger-store';
import { ensureLedgerTable } from '../../functions/ledger/table';
import { handleWorkMessage } from '../../functions/queue/handle-work-message';
import { benchWriteTool, type EffectLog } from './bench-tools';
import { CapacityMeter, type CapacityTally, LEDGER_INDEXES } from './capacity-meter';
import { type BenchLedger, benchLedger } from './ledger-side';
import { createPowertoolsTable, lambdaContext, powertoolsHandler } from './powertools-baseline';
import { realArguments } from './real-arguments';

/** Capacity units per operation of one scenario at one argument size. */
export interface CapacityRow {
  scenario: string;
  argumentBytes: number;
  tl: CapacityTally;
  pt: CapacityTally | undefined;
}

const schema = z
  .object({ target: z.string(), n: z.number().int(), document: z.unknown().optional() })
  .strict();

type BenchArguments = ReturnType<typeof realArguments>;

function benchTools(effects: EffectLog): AnyTool[] {
  return [
    benchWriteTool(effects),
    defineTool({
      name: 'bench.approved',
      description: 'the benchmark effect behind a human approval',
      effect: 'write',
      requiresApproval: true,
      schema,
      async execute(args, ctx) {
        return { ok: true, n: args.n, effect: effects.apply(ctx.operationId) };
      },
    }),
    defineTool({
      name: 'bench.uncertain',
      description: 'applies the effect, then loses the answer: the reconciler finds it applied',
      effect: 'write',
      schema,
      async execute(_args, ctx) {
        effects.apply(ctx.operationId);
        throw new UncertainOutcomeError('bench_lost_response', 'the response was lost');
      },
      async reconcile(_args, ctx) {
        return effects.of(ctx.operationId) > 0
          ? { status: 'applied', result: { ok: true, reconciled: true } }
          : { status: 'not_applied' };
      },
    }),
  ];
}

/**
 * Capacity per scenario, measured on dynalite with {@link CapacityMeter}: tool-ledger on its own
 * table (both GSIs as deployed) and Powertools idempotency on its table, in the same run, at each
 * argument size. Each row is the mean over `runs` operations.
 */
export async function capacityTable(
  newClient: () => DynamoDBClient,
  effects: EffectLog,
  ptEffects: EffectLog,
  sizes: readonly number[],
  runs: number,
): Promise<CapacityRow[]> {
  const tlClient = newClient();
  const ptClient = newClient();
  const snapshot = newClient();
  const tlTable = 'bench-capacity-ledger';
  const ptTable = 'bench-capacity-powertools';
  await ensureLedgerTable(tlClient, tlTable);
  await createPowertoolsTable(ptClient, ptTable);
  const tlMeter = new CapacityMeter(
    tlClient,
    snapshot,
    [LEDGER_TABLE.partitionKey.name, LEDGER_TABLE.sortKey.name],
    LEDGER_INDEXES,
  );
  const ptMeter = new CapacityMeter(ptClient, snapshot, ['id'], []);
  const ledger = benchLedger(tlClient, tlTable, benchTools(effects));
  // The same ledger storing arguments and results as plain text, as every release before compression:
  // the "before" rows, measured in the same run.
  const plainTable = 'bench-capacity-ledger-plain';
  await ensureLedgerTable(tlClient, plainTable);
  const plain = benchLedger(tlClient, plainTable, benchTools(effects), false);
  // The bench's own check of where an operation ended reads through an unmetered client: it is not
  // part of the operation, and a consistent read of the item would add 1 (9 at 32 KiB) to every row.
  const unmetered = new LedgerStore({ client: snapshot, tableName: tlTable });
  const finalState = async (id: string) => ({ record: await unmetered.get(operationKey('bench', id)) });
  const pt = powertoolsHandler({
    client: ptClient,
    tableName: ptTable,
    work: async (e) => ({ ok: true, n: e.arguments.n, effect: ptEffects.apply(e.operation_id) }),
  });
  const ptCall = (id: string, args: Record<string, unknown>) =>
    pt({ operation_id: id, tool: 'bench.effect', arguments: args }, lambdaContext(10_000));

  const rows: CapacityRow[] = [];
  for (const bytes of sizes) {
    const measure = async (
      scenario: string,
      tlRun: (id: string, args: BenchArguments, i: number) => Promise<unknown>,
      ptRun?: (id: string, args: BenchArguments) => Promise<unknown>,
      prepare?: (id: string, args: BenchArguments) => Promise<void>,
    ) => {
      const tl: CapacityTally[] = [];
      const ptTallies: CapacityTally[] = [];
      for (let i = 0; i < runs; i++) {
        const id = `cap-${scenario.replace(/[^a-z]+/g, '-')}-${bytes}-${i}`;
        const args = realArguments(bytes, i);
        if (prepare) await prepare(id, args);
        tlMeter.take();
        ptMeter.take();
        await tlRun(id, args, i);
        tl.push(tlMeter.take());
        if (ptRun) {
          await ptRun(id, args);
          ptTallies.push(ptMeter.take());
        }
      }
      rows.push({ scenario, argumentBytes: bytes, tl: mean(tl), pt: ptRun ? mean(ptTallies) : undefined });
    };

    await measure(
      'first execution',
      async (id, args) => expectState(await ledger.submit(id, 'bench.effect', args), 'succeeded'),
      async (id, args) => ptCall(id, args),
    );
    await measure('first execution, before (plain text)', async (id, args) =>
      expectState(await plain.submit(id, 'bench.effect', args), 'succeeded'),
    );
    await measure('approval → executed, before (plain text)', async (id, args) => {
      const out = await submitAs(plain, id, 'bench.approved', args, 'sync', 'bench-agent');
      expectState(out, 'awaiting_approval');
      await decideApproval(plain.deps, newRequest(plain.deps), {
        tenant: 'bench',
        principal: 'bench-approver',
        operationId: id,
        decision: 'approve',
        argumentsDigest: recordOf(out).arguments_digest,
      });
      await deliver(plain);
    });
    await measure(
      'replay (cold cache)',
      async (id, args) => {
        ledger.deps.cache = new TerminalCache();
        expectState(await ledger.submit(id, 'bench.effect', args), 'succeeded');
      },
      async (id, args) => ptCall(id, args),
      async (id, args) => {
        await ledger.submit(id, 'bench.effect', args);
        await ptCall(id, args);
      },
    );
    await measure(
      'conflict (cold cache)',
      async (id, args) => {
        ledger.deps.cache = new TerminalCache();
        await ledger.submit(id, 'bench.effect', { ...args, target: `x${args.target}` }).then(
          () => {
            throw new Error('expected a conflict');
          },
          () => undefined,
        );
      },
      async (id, args) => ptCall(id, { ...args, target: `x${args.target}` }).catch(() => undefined),
      async (id, args) => {
        await ledger.submit(id, 'bench.effect', args);
        await ptCall(id, args);
      },
    );
    await measure('queued → executed', async (id, args) => {
      const accepted = await submitAs(ledger, id, 'bench.effect', args, 'async', 'bench-agent');
      expectState(accepted, 'queued');
      await deliver(ledger);
      expectState(await finalState(id), 'succeeded');
    });
    await measure('approval → executed', async (id, args) => {
      const out = await submitAs(ledger, id, 'bench.approved', args, 'sync', 'bench-agent');
      expectState(out, 'awaiting_approval');
      await decideApproval(ledger.deps, newRequest(ledger.deps), {
        tenant: 'bench',
        principal: 'bench-approver',
        operationId: id,
        decision: 'approve',
        argumentsDigest: recordOf(out).arguments_digest,
      });
      await deliver(ledger);
      expectState(await finalState(id), 'succeeded');
    });
    await measure('uncertain → reconciled', async (id, args) => {
      expectState(await ledger.submit(id, 'bench.uncertain', args), 'uncertain');
      await reconcilePass(ledger.deps, newRequest(ledger.deps));
      expectState(await finalState(id), 'succeeded');
    });
  }
  return rows;
}

async function submitAs(
  ledger: BenchLedger,
  id: string,
  tool: string,
  args: unknown,
  mode: 'sync' | 'async',
  principal: string,
) {
  return submitOperation(ledger.deps, newRequest(ledger.deps), {
    tenant: 'bench',
    principal,
    operationId: id,
    tool,
    arguments: args,
    mode,
  });
}

/** Runs every message the ledger enqueued, as the executor would. */
async function deliver(ledger: BenchLedger): Promise<void> {
  while (ledger.queue.messages.length > 0) {
    const message = ledger.queue.messages.shift();
    await handleWorkMessage(
      ledger.deps,
      newRequest(ledger.deps),
      JSON.stringify(message),
      new Set(['bench']),
    );
  }
}

function recordOf(out: unknown): { state: string; arguments_digest: string } {
  return (out as { record: { state: string; arguments_digest: string } }).record;
}

function expectState(out: unknown, state: string): void {
  const got = (out as { record?: { state?: string } }).record?.state;
  if (got !== state) throw new Error(`capacity bench: expected ${state}, got ${got}`);
}

function mean(tallies: CapacityTally[]): CapacityTally {
  const out: CapacityTally = { tableWrites: 0, reads: 0, indexWrites: {} };
  for (const t of tallies) {
    out.tableWrites += t.tableWrites / tallies.length;
    out.reads += t.reads / tallies.length;
    for (const [k, v] of Object.entries(t.indexWrites))
      out.indexWrites[k] = (out.indexWrites[k] ?? 0) + v / tallies.length;
  }
  return out;
}

/** The capacity table as markdown. */
export function capacityMarkdown(rows: CapacityRow[]): string {
  const f = (n: number) => (Math.round(n * 100) / 100).toString();
  const total = (t: CapacityTally) =>
    t.tableWrites + t.reads + Object.values(t.indexWrites).reduce((a, b) => a + b, 0);
  const lines = [
    '| scenario | arguments | table WCU | attention WCU | unresolved WCU | RCU | tool-ledger units | Powertools WCU | Powertools RCU | Powertools units | ratio |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of rows) {
    const tl = total(r.tl);
    const pt = r.pt ? total(r.pt) : undefined;
    lines.push(
      `| ${r.scenario} | ${r.argumentBytes / 1024} KiB | ${f(r.tl.tableWrites)} | ${f(r.tl.indexWrites.attention ?? 0)} | ${f(r.tl.indexWrites.unresolved ?? 0)} | ${f(r.tl.reads)} | ${f(tl)} | ${r.pt ? f(r.pt.tableWrites) : '—'} | ${r.pt ? f(r.pt.reads) : '—'} | ${pt === undefined ? '—' : f(pt)} | ${pt ? `${(tl / pt).toFixed(2)}×` : '—'} |`,
    );
  }
  return lines.join('\n');
}
