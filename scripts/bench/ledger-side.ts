import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { loadConfig } from '../../functions/config';
import type { AnyTool } from '../../functions/domain/tool';
import { createDeps, type LedgerDeps, newRequest } from '../../functions/engine/ledger-deps';
import { submitOperation } from '../../functions/engine/submit-operation';
import type { SubmitResult } from '../../functions/engine/submit-result';
import type { WorkMessage, WorkQueue } from '../../functions/engine/work-queue';
import { LedgerStore } from '../../functions/ledger/ledger-store';
import type { LedgerMetrics } from '../../functions/observability/metrics';
import { ToolRegistry } from '../../functions/tools/registry';

/** Metrics that go nowhere: Powertools idempotency emits none, so neither side pays for them. */
export const silentMetrics: LedgerMetrics = {
  count() {},
  gauge() {},
  latency() {},
  flush() {},
};

/** A work queue kept in memory (the benchmark never needs SQS). */
export class MemoryWorkQueue implements WorkQueue {
  readonly messages: WorkMessage[] = [];
  async enqueue(message: WorkMessage): Promise<void> {
    this.messages.push(message);
  }
}

/** tool-ledger as the benchmark drives it: the real engine and store, silent sinks, a movable clock. */
export interface BenchLedger {
  deps: LedgerDeps;
  queue: MemoryWorkQueue;
  /** One synchronous call, as the HTTP adapter would make it. */
  submit(operationId: string, tool: string, args: unknown): Promise<SubmitResult>;
  /** Moves this ledger's clock forward (lease expiry without waiting). */
  advance(ms: number): void;
}

/**
 * Builds tool-ledger on a table. Transition logs and metrics are silenced (Powertools idempotency
 * writes neither), everything else is the production engine.
 */
export function benchLedger(
  client: DynamoDBClient,
  tableName: string,
  tools: AnyTool[],
  compressPayloads = true,
): BenchLedger {
  let offset = 0;
  const queue = new MemoryWorkQueue();
  const deps = createDeps({
    store: new LedgerStore({ client, tableName, compressPayloads }),
    tools: new ToolRegistry(tools),
    config: { ...loadConfig({}), tableName },
    queue,
    metrics: silentMetrics,
    log: () => {},
    clock: () => Date.now() + offset,
  });
  return {
    deps,
    queue,
    submit(operationId, tool, args) {
      return submitOperation(deps, newRequest(deps), {
        tenant: 'bench',
        principal: 'bench-agent',
        operationId,
        tool,
        arguments: args,
        mode: 'sync',
      });
    },
    advance(ms) {
      offset += ms;
    },
  };
}
