import { fc, it } from '@fast-check/vitest';
import type { CallToolResult, ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { downstreamKey } from '../../functions/domain/downstream-key';
import type { AnyTool } from '../../functions/domain/tool';
import { LedgerStore } from '../../functions/ledger/ledger-store';
import { UpstreamGateway } from '../../functions/mcp/gateway';
import { META_OPERATION_ID } from '../../functions/mcp/protocol';
import type { McpUpstream } from '../../functions/mcp/upstreams';
import { logger } from '../../functions/observability/logger';
import { ToolRegistry } from '../../functions/tools/registry';
import { type MisbehavingUpstream, startMisbehavingUpstream, tool } from '../mcp/misbehaving-upstream';
import { coverage, coverageLine } from './support/coverage';
import { violations } from './support/invariants';
import { tracked } from './support/model-tools';
import { modelParams, modelTimeout, stallBeforeExecute } from './support/params';
import { quiesce } from './support/quiesce';
import { type Schedule, scheduleArb } from './support/schedule';
import { startSharedEnv } from './support/shared-env';
import { traceUnseen } from './support/trace-file';
import { replaySchedule, traceLine } from './support/trace-replay';
import { type ModelProcess, type SharedEnv, World } from './support/world';

/**
 * The model-based suite with an upstream MCP server (the official SDK's server, misbehaving on
 * purpose: test/mcp/misbehaving-upstream.ts) behind the gateway, whose behaviour changes between the
 * groups of a schedule. The schedule's `scripted.plain` operations run through it: the gateway's tool
 * for the upstream's `plain` (renamed to the model's tool name), whose calls apply a countable effect
 * at the upstream. Between groups the upstream may start lying that the tool is read-only, change the
 * tool's schema (a new required field: stored arguments no longer fit), list the tool twice, answer
 * calls with megabytes after applying them, or never answer (after applying, or before). A listing
 * reaches some worker processes now and the rest when they restart. The same invariants hold as in
 * the rest of the suite: no effect twice, replays equal the first outcome, nothing lost or stuck (an
 * upstream call whose answer never came is uncertain, and goes to an operator who resolves it from the
 * upstream's effect log), the transition lines replay with none rejected.
 */

type Mode =
  | 'honest'
  | 'lies_read_only'
  | 'new_schema'
  | 'repeats_name'
  | 'huge_answer'
  | 'hangs_applied'
  | 'hangs';
const MODES: readonly Mode[] = [
  'honest',
  'lies_read_only',
  'new_schema',
  'repeats_name',
  'huge_answer',
  'hangs_applied',
  'hangs',
];

interface Change {
  mode: Mode;
  reach: 'all' | number[];
}

interface UpstreamSchedule {
  schedule: Schedule;
  /** Index i: the upstream's behaviour from group i on; past the last group: during the final drive. */
  changes: (Change | null)[];
}

const MAX_GROUPS = 6;

const upstreamScheduleArb: fc.Arbitrary<UpstreamSchedule> = fc.record({
  schedule: scheduleArb({
    kinds: ['scripted.plain', 'scripted.plain', 'scripted.effect'],
    maxOps: 3,
    maxGroups: MAX_GROUPS,
    maxStepsPerGroup: 3,
    stallBeforeExecute: stallBeforeExecute(),
  }),
  changes: fc.array(
    fc.oneof(
      {
        weight: 1,
        arbitrary: fc.record({
          mode: fc.constantFrom(...MODES),
          reach: fc.oneof(
            fc.constant<'all'>('all'),
            fc.uniqueArray(fc.nat({ max: 2 }), { minLength: 1, maxLength: 2 }),
          ),
        }),
      },
      { weight: 1, arbitrary: fc.constant(null) },
    ),
    { minLength: MAX_GROUPS + 1, maxLength: MAX_GROUPS + 1 },
  ),
});

const ARGS_SCHEMA = {
  type: 'object',
  properties: { tenant: { type: 'string' }, variant: { type: 'integer' }, canary: { type: 'string' } },
  required: ['tenant', 'variant', 'canary'],
  additionalProperties: false,
};

/** The upstream's listing in a mode. */
function listing(mode: Mode): ListToolsResult {
  switch (mode) {
    case 'lies_read_only':
      return { tools: [tool('plain', ARGS_SCHEMA, { annotations: { readOnlyHint: true } })] };
    case 'new_schema':
      return {
        tools: [
          tool('plain', {
            ...ARGS_SCHEMA,
            properties: { ...ARGS_SCHEMA.properties, region: { type: 'string' } },
            required: [...ARGS_SCHEMA.required, 'region'],
          }),
        ],
      };
    case 'repeats_name':
      return { tools: [tool('plain', ARGS_SCHEMA), tool('plain', ARGS_SCHEMA, { description: 'another' })] };
    default:
      return { tools: [tool('plain', ARGS_SCHEMA)] };
  }
}

const stats = { readPathEffects: 0, changes: 0, calls: 0, hung: 0, huge: 0, notServed: 0, refusedCalls: 0 };

/** What the upstream does now; `world` receives its effects. */
const upstreamState: { mode: Mode; world: World | undefined } = { mode: 'honest', world: undefined };

async function call(
  args: Record<string, unknown> | undefined,
  meta: Record<string, unknown> | undefined,
): Promise<CallToolResult> {
  stats.calls += 1;
  const world = upstreamState.world;
  const mode = upstreamState.mode;
  if (mode === 'hangs') {
    stats.hung += 1;
    return new Promise<never>(() => {});
  }
  const op = world?.ops.find((o) => o.canaries.includes(String(args?.canary)));
  if (op && world) {
    // The call of a ledger attempt carries its record's downstream key. Any other call is the read
    // path's, run because a trusted upstream said the tool is read-only: its effect is the lie's, outside
    // the ledger (a read has no record), and counted apart.
    const record = await new LedgerStore({ client: shared.env.admin, tableName: world.table }).get(
      operationKey(op.tenant, op.operationId),
    );
    const key = record ? downstreamKey(record.tenant, record.operation_id, record.reservation_id) : undefined;
    if (key !== undefined && meta?.[META_OPERATION_ID] === key) {
      world.scripted.effects.push({ key: op.key, variant: Number(args?.variant), attempt: 0 });
    } else stats.readPathEffects += 1;
  }
  if (mode === 'hangs_applied') {
    stats.hung += 1;
    return new Promise<never>(() => {});
  }
  if (mode === 'huge_answer') {
    stats.huge += 1;
    return { content: [{ type: 'text', text: 'x'.repeat(6 * 1024 * 1024) }] };
  }
  return { content: [{ type: 'text', text: 'ok' }] };
}

let server: MisbehavingUpstream;
let upstream: McpUpstream;

/** The gateway's tool in each mode, listed once per schedule per mode (undefined: not served). */
class UpstreamDeployments {
  private readonly tools = new Map<Mode, AnyTool | undefined>();
  private readonly bySlot = new Map<number, Mode>();
  private readonly procs = new Map<number, ModelProcess>();
  latest: Mode = 'honest';
  /** Every mode some process listed during the schedule. */
  readonly used = new Set<Mode>(['honest']);
  world!: World;

  async list(mode: Mode): Promise<void> {
    if (this.tools.has(mode)) return;
    const previous = upstreamState.mode;
    upstreamState.mode = mode;
    const gateway = new UpstreamGateway([upstream], []);
    const listed = (await gateway.registry()).find('up.plain');
    upstreamState.mode = previous;
    if (!listed) stats.notServed += 1;
    this.tools.set(
      mode,
      listed
        ? tracked({ ...listed, name: this.world.registry.get('model.plain').name }, this.world.inflight)
        : undefined,
    );
  }

  registry(mode: Mode): ToolRegistry {
    const up = this.tools.get(mode);
    const others = this.world.registry.list().filter((t) => t.name !== 'model.plain');
    return new ToolRegistry(up ? [...others, up] : others);
  }

  onProcess(proc: ModelProcess, slot: number | undefined): void {
    if (slot !== undefined) {
      this.bySlot.set(slot, this.latest);
      this.procs.set(slot, proc);
    }
    proc.deps.tools = this.registry(this.latest);
  }

  async apply(change: Change): Promise<void> {
    stats.changes += 1;
    await this.list(change.mode);
    this.latest = change.mode;
    this.used.add(change.mode);
    upstreamState.mode = change.mode;
    for (const [slot, proc] of this.procs) {
      if (change.reach !== 'all' && !change.reach.includes(slot)) continue;
      this.bySlot.set(slot, change.mode);
      proc.deps.tools = this.registry(change.mode);
    }
  }
}

async function runUpstreamSchedule(env: SharedEnv, us: UpstreamSchedule): Promise<void> {
  const deployments = new UpstreamDeployments();
  upstreamState.mode = 'honest';
  let world: World | undefined;
  world = await World.create(env, us.schedule, {
    onProcess: (proc, slot) => deployments.onProcess(proc, slot),
  });
  deployments.world = world;
  upstreamState.world = world;
  await deployments.list('honest');
  try {
    for (const [i, group] of us.schedule.groups.entries()) {
      const change = us.changes[i];
      if (change) await deployments.apply(change);
      await world.run(group);
    }
    const last = us.changes[us.schedule.groups.length];
    if (last) await deployments.apply(last);
    // An upstream that lists the name twice for good leaves its operations to no tool at all: the final
    // drive starts once that listing is fixed. One whose schema keeps refusing the stored arguments
    // stays: its operations go to the final operator as `policy_changed`, who resolves them `failed`
    // as the docs say (resolving `not_applied` brings them back while the tool does not match: seed
    // 598383695 found that loop in this suite's own operator).
    if (deployments.latest === 'repeats_name') {
      await deployments.apply({ mode: 'honest', reach: 'all' });
    }
    const end = await quiesce(world);
    coverage.schedules += 1;
    coverage.operations += world.ops.length;
    coverage.maxRounds = Math.max(coverage.maxRounds, end.rounds);
    // A call made while the upstream lies that its tool is read-only is a read's answer (no record).
    for (const c of world.conflicts.splice(0)) {
      if (world.logs.some((l) => l.request_id === c.requestId && l.state_before === null)) {
        if (c.requestId) world.readRequests.add(c.requestId);
      } else world.conflicts.push(c);
    }
    // A call to a process whose listing does not serve the tool (a name listed twice, differently) is
    // refused as an unknown tool, and one whose listing's schema now requires a field the old arguments
    // lack is refused as invalid: no record, no effect. A retry of a terminal operation there is refused
    // the same way instead of replayed (the call is checked before its record is read).
    const refusal =
      /^(submit|final-(warm|cold) replay of) \S+: unexpected (UnknownToolError|ValidationError)/;
    // An executor whose listing does not serve the tool gives the message back to the queue.
    const unknownAtWorker = /^work message \S+: retry with tool_unknown$/;
    for (let i = world.anomalies.length - 1; i >= 0; i--) {
      const text = world.anomalies[i] ?? '';
      const match = refusal.exec(text);
      const cause = match?.[3] === 'ValidationError' ? 'new_schema' : 'repeats_name';
      if ((match || unknownAtWorker.test(text)) && deployments.used.has(cause)) {
        stats.refusedCalls += 1;
        world.anomalies.splice(i, 1);
      }
    }
    const found = await violations(env, world, end);
    const ledgerLines = world.logs.filter((line) => !world?.readRequests.has(line.request_id));
    found.push(...replaySchedule(ledgerLines, (line) => world?.keyOf(line) ?? '', world.unseenWrites));
    traceUnseen(world.table, world.unseenWrites);
    if (found.length > 0) throw new Error(`invariants violated:\n- ${found.join('\n- ')}`);
  } finally {
    upstreamState.mode = 'honest';
    await world.dispose();
    upstreamState.world = undefined;
  }
}

let shared: Awaited<ReturnType<typeof startSharedEnv>>;
beforeAll(async () => {
  shared = await startSharedEnv();
  server = await startMisbehavingUpstream({
    list: () => listing(upstreamState.mode),
    call: (_name, args, meta) => call(args, meta),
  });
  upstream = { name: 'up', url: server.url, trusted: true, timeoutMs: 300 };
  logger.setLogLevel('SILENT');
});
afterAll(async () => {
  console.log(coverageLine());
  console.log(traceLine());
  console.log(
    `upstream model: changes=${stats.changes} calls=${stats.calls} hung=${stats.hung} huge=${stats.huge} ` +
      `listings_not_served=${stats.notServed} refused_calls=${stats.refusedCalls} read_path_effects=${stats.readPathEffects}`,
  );
  await server?.close();
  await shared?.stop();
});

const RUNS = 250;

describe('model-based: an upstream MCP server that misbehaves between the steps of a schedule', () => {
  it.prop([upstreamScheduleArb], modelParams<[UpstreamSchedule]>(RUNS))(
    'lies about hints, changed schemas, repeated names, huge and missing answers: no effect twice, replays equal the first outcome, nothing lost or stuck',
    async (us) => {
      await runUpstreamSchedule(shared.env, us);
    },
    modelTimeout(RUNS),
  );
});
