import { DEFAULT_EXECUTOR_CONCURRENCY } from '../functions/contract/environment';

/**
 * How many of each handler may run at once. Without caps a burst on the work queue scales the SQS
 * poller to hundreds of executors: targets are flooded, and the executors take the account's whole
 * concurrency, so the API and the reconciler are throttled exactly when they are needed. The defaults
 * cap the executor twice (the event source stops polling at `executorMaxConcurrency`; reserved
 * concurrency guarantees it that many and no more), the reconciler at one pass at a time, and reserve
 * the API what the declared throughput needs ({@link apiReservedFor}).
 */

/** Most executors the SQS event source starts by default (local mode runs as many executor loops). */
export const DEFAULT_EXECUTOR_MAX_CONCURRENCY = DEFAULT_EXECUTOR_CONCURRENCY;

/** Reconciler passes at once: one. An overlapping pass is safe but only repeats reads. */
export const DEFAULT_RECONCILER_RESERVED = 1;

/** The declared throughput's default, in requests per second (lib/capacity.ts). */
const DEFAULT_API_REQUESTS_PER_SECOND = 2_000;

/** A typical API request (a first execution of a quick tool, a replay, a read) takes about this long. */
const TYPICAL_API_REQUEST_SECONDS = 0.1;

/**
 * The API's default reserved concurrency: the declared requests per second at a typical 100 ms each
 * (200 for the default 2,000 per second). Reserved, the API can neither be starved by the executors
 * nor take the account's whole concurrency; slower synchronous tools need more (throughput × duration).
 */
export function apiReservedFor(requestsPerSecond: number): number {
  return Math.max(10, Math.ceil(requestsPerSecond * TYPICAL_API_REQUEST_SECONDS));
}

/** Reserved concurrency of a handler: a number, or `false` for none (the account's shared pool). */
export type ReservedConcurrency = number | false;

/** The props this module reads. */
export interface ConcurrencyProps {
  readonly executorMaxConcurrency?: number;
  readonly reservedConcurrency?: {
    readonly api?: ReservedConcurrency;
    readonly executor?: ReservedConcurrency;
    readonly reconciler?: ReservedConcurrency;
  };
}

/** Concurrency with the defaults applied; `undefined` means not reserved. */
export interface ResolvedConcurrency {
  executorMaxConcurrency: number;
  reserved: { api?: number; executor?: number; reconciler?: number };
}

/**
 * Applies the defaults and checks them: the executor's reserved concurrency must be at least the event
 * source's `maxConcurrency`, or the poller keeps invoking a throttled function and messages return to
 * the queue (and count towards the DLQ) without ever running.
 */
export function resolveConcurrency(
  props: ConcurrencyProps,
  problems: string[],
  requestsPerSecond: number = DEFAULT_API_REQUESTS_PER_SECOND,
): ResolvedConcurrency {
  const max = props.executorMaxConcurrency ?? DEFAULT_EXECUTOR_MAX_CONCURRENCY;
  const given = props.reservedConcurrency ?? {};
  const reserved: ResolvedConcurrency['reserved'] = {};
  const api = given.api ?? apiReservedFor(requestsPerSecond);
  const executor = given.executor ?? max;
  const reconciler = given.reconciler ?? DEFAULT_RECONCILER_RESERVED;
  if (api !== false) reserved.api = api;
  if (executor !== false) reserved.executor = executor;
  if (reconciler !== false) reserved.reconciler = reconciler;
  if (!isIntIn(max, 2, 1000)) {
    problems.push(`executorMaxConcurrency is ${max}; SQS event sources allow 2 to 1000.`);
  }
  for (const [name, value] of Object.entries(reserved)) {
    if (!isIntIn(value, 1, 10_000)) {
      problems.push(
        `reservedConcurrency.${name} is ${value}; use a positive integer, or false for no reservation.`,
      );
    }
  }
  if (reserved.executor !== undefined && reserved.executor < max) {
    problems.push(
      `reservedConcurrency.executor is ${reserved.executor}, below executorMaxConcurrency ${max}: the SQS ` +
        'poller would keep invoking a throttled executor and messages would come back unrun; set ' +
        `reservedConcurrency.executor to at least ${max}, or lower executorMaxConcurrency to ${reserved.executor}.`,
    );
  }
  return { executorMaxConcurrency: max, reserved };
}

function isIntIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
