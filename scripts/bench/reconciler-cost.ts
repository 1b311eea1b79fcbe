import { randomUUID } from 'node:crypto';
import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { attentionShard } from '../../functions/contract/keys';
import { LEDGER_TABLE, OPERATION_SK } from '../../functions/contract/table';
import type { OperationRecord } from '../../functions/domain/operation';
import type { AnyTool } from '../../functions/domain/tool';
import { reconcilePass } from '../../functions/engine/reconcile';
import { ensureLedgerTable } from '../../functions/ledger/table';
import { benchArguments } from './bench-tools';
import { CallCounter } from './call-counter';
import { benchLedger } from './ledger-side';

/** One measured reconciler pass over a table of a given size. */
export interface ReconcilerCost {
  terminalRecords: number;
  unresolvedRecords: number;
  /** Items DynamoDB returned to the pass's Queries (counted by the SDK middleware). */
  itemsRead: number;
  /** Query requests sent. */
  queries: number;
  passMs: number;
  /** Time to load the table, ms (not part of the pass). */
  loadMs: number;
}

const UNRESOLVED = 20;
const BATCH = 25;
const PARALLEL = 8;

/**
 * Reconciler cost against table size (SPEC §7): one pass over a table with N terminal records and 20
 * unresolved ones (crashed workers: `pending` with an expired lease). The pass reads the sparse
 * attention GSI only, so the items it reads must stay at 20 whatever N is.
 *
 * The sizes share one table that grows; each size adds 20 new unresolved records, and the previous
 * ones, already decided, are no longer due. The clock is fixed so that "due" means the same each time.
 */
export async function reconcilerCost(
  client: DynamoDBClient,
  tools: AnyTool[],
  sizes: readonly number[],
): Promise<ReconcilerCost[]> {
  const table = 'bench-reconciler';
  await ensureLedgerTable(client, table);
  const counter = new CallCounter(client, [LEDGER_TABLE.partitionKey.name, LEDGER_TABLE.sortKey.name]);
  const ledger = benchLedger(client, table, tools);
  const now = Date.now();
  const shards = ledger.deps.config.attentionShards;
  const out: ReconcilerCost[] = [];
  let loaded = 0;
  for (const [round, size] of sizes.entries()) {
    const loadStarted = performance.now();
    const items: OperationRecord[] = [];
    for (let i = loaded; i < size; i++) items.push(terminalRecord(i, now));
    for (let i = 0; i < UNRESOLVED; i++) items.push(crashedRecord(round, i, now, shards));
    await batchWrite(client, table, items);
    loaded = size;
    const loadMs = performance.now() - loadStarted;
    counter.take();
    const started = performance.now();
    await reconcilePass(ledger.deps, { requestId: `reconcile-${round}`, now });
    const passMs = performance.now() - started;
    const tally = counter.take();
    out.push({
      terminalRecords: size,
      unresolvedRecords: UNRESOLVED,
      itemsRead: tally.queryItems,
      queries: tally.byCommand.QueryCommand ?? 0,
      passMs,
      loadMs,
    });
  }
  return out;
}

function baseRecord(id: string, now: number): OperationRecord {
  const at = new Date(now - 60_000).toISOString();
  const args = benchArguments(1);
  return {
    pk: `bench#${id}`,
    sk: OPERATION_SK,
    tenant: 'bench',
    operation_id: id,
    tool: 'bench.effect',
    arguments: JSON.stringify({ n: args.n, target: args.target }),
    arguments_digest: `v1:${'0'.repeat(64)}`,
    state: 'succeeded',
    attempt: 1,
    max_attempts: 3,
    retention_seconds: 2_592_000,
    requested_by: 'bench-agent',
    reservation_id: randomUUID(),
    created_at: at,
    updated_at: at,
  };
}

/** A succeeded record as the engine leaves it: result, history, expiry, in no index. */
function terminalRecord(i: number, now: number): OperationRecord {
  const record = baseRecord(`done-${i}`, now);
  const owner = `w-bench/${randomUUID()}`;
  return {
    ...record,
    lease_owner: owner,
    lease_expires_at: now - 45_000,
    outcome_by: owner,
    outcome_code: 'succeeded',
    result: JSON.stringify({ ok: true, n: i }),
    completed_at: record.created_at,
    expires_at: Math.floor(now / 1000) + 2_592_000,
    history: [
      { at: record.created_at, from: null, to: 'pending', attempt: 1, by: 'bench-agent' },
      { at: record.created_at, from: 'pending', to: 'succeeded', attempt: 1, by: owner, code: 'succeeded' },
    ],
  };
}

/** A worker died holding this one: `pending`, lease expired, due in the attention GSI. */
function crashedRecord(round: number, i: number, now: number, shards: number): OperationRecord {
  const record = baseRecord(`crashed-${round}-${i}`, now);
  return {
    ...record,
    state: 'pending',
    lease_owner: `w-dead/${randomUUID()}`,
    lease_expires_at: now - 1_000,
    attention_shard: attentionShard(record.pk, shards),
    attention_at: now - 1_000,
    unresolved_tenant: 'bench',
    unresolved_at: now - 60_000,
    history: [{ at: record.created_at, from: null, to: 'pending', attempt: 1, by: 'bench-agent' }],
  };
}

/** Loads items with BatchWriteItem, several batches in flight, retrying unprocessed items. */
async function batchWrite(client: DynamoDBClient, table: string, items: OperationRecord[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const chunk = items.slice(next, next + BATCH);
      next += BATCH;
      let requests: WriteRequest[] = chunk.map((item) => ({ PutRequest: { Item: marshall(item) } }));
      while (requests.length > 0) {
        const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
        requests = out.UnprocessedItems?.[table] ?? [];
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}
