import { randomUUID } from 'node:crypto';
import type { LedgerConfig } from '../config';
import type { AnyTool } from '../domain/tool';
import type { EventSink } from '../events/event-sink';
import { type LedgerMetrics, PowertoolsLedgerMetrics } from '../observability/metrics';
import { logTransition, type TransitionSink } from '../observability/transition-log';
import type { ToolRegistry } from '../tools/registry';
import type { ObjectStore } from './object-store';
import type { OperationStore } from './operation-store';
import { TerminalCache } from './terminal-cache';
import type { WorkQueue } from './work-queue';

/**
 * Everything the engine needs from the outside world, passed explicitly so that handlers, local
 * mode, tests and benchmarks wire the same engine to different stores, clocks and sinks.
 */
export interface LedgerDeps {
  /** The ledger's storage (functions/ledger/ledger-store.ts on DynamoDB). */
  store: OperationStore;
  tools: ToolRegistry;
  config: LedgerConfig;
  queue: WorkQueue;
  /** Epoch milliseconds. Read once per request (the contract, §2). */
  clock: () => number;
  log: TransitionSink;
  metrics: LedgerMetrics;
  /** Label of this process, part of every lease owner. */
  workerId: string;
  /** Terminal records seen by this process: replays and conflicts with no DynamoDB call. */
  cache: TerminalCache;
  /**
   * The version of a tool's published schema, stored in each new record's policy
   * (functions/tools/schema-version.ts). Set where zod's JSON Schema generator is loaded anyway (the
   * API); absent, new records carry no version.
   */
  schemaVersion?: (tool: AnyTool) => string | undefined;
  /**
   * Where whole results too large for their record are kept (engine/payloads.ts): the deployment's
   * bucket on AWS, the S3 emulator on the data folder in local mode. Absent (an engine built without
   * one), such a result is kept as `{truncated: true, size, sha256}`.
   */
  objects?: ObjectStore;
  /**
   * Where completion events go right after their transition (local mode's events queue). Unset on
   * AWS, where the events function reads them from the table's stream.
   */
  events?: EventSink;
}

/** What one request carries through the engine: identity for logs and lease ownership. */
export interface RequestContext {
  requestId: string;
  /** Epoch ms at which the request started: the request's one "now". */
  now: number;
  /** Remaining time of the Lambda invocation, ms (absent: no limit beyond the tool's). */
  remainingMs?: () => number;
}

/** Builds deps with production defaults for anything not given. */
export function createDeps(
  parts: Pick<LedgerDeps, 'store' | 'tools' | 'config' | 'queue'> & Partial<LedgerDeps>,
): LedgerDeps {
  return {
    clock: Date.now,
    log: logTransition,
    metrics: new PowertoolsLedgerMetrics(),
    workerId: `w-${randomUUID().slice(0, 8)}`,
    cache: new TerminalCache(1000),
    ...parts,
  };
}

/** A new request context, reading the clock once. */
export function newRequest(deps: LedgerDeps, requestId?: string, remainingMs?: () => number): RequestContext {
  const ctx: RequestContext = { requestId: requestId ?? randomUUID(), now: deps.clock() };
  if (remainingMs) ctx.remainingMs = remainingMs;
  return ctx;
}
