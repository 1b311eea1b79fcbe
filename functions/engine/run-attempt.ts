import { LEDGER_METRICS } from '../contract/metrics';
import type { OperationRecord } from '../domain/operation';
import { boundPolicy } from '../domain/policy';
import type { AnyTool } from '../domain/tool';
import { classify, sanitize } from './attempt-outcome';
import type { LedgerDeps, RequestContext } from './ledger-deps';
import { toolContext, underDeadline } from './tool-invocation';
import { type AttemptOutcome, type Lease, recordOutcome } from './transitions';

/**
 * Runs one attempt of a claimed operation and records its outcome (the contract, §3 steps 5–7): the tool gets
 * an AbortSignal that fires at the lease's hard deadline, and the engine stops waiting then even if
 * the tool ignores the signal. Returns the record as the commit left it (or as found, if another
 * writer had moved it on). An operation reserved as a read (the executor runs reads as operations) is
 * never left `uncertain`: running a read again is only a second read, so an unknown outcome is
 * `failed_retryable`, as on the read path.
 */
export async function runAttempt(
  deps: LedgerDeps,
  req: RequestContext,
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  lease: Lease,
): Promise<OperationRecord> {
  const started = deps.clock();
  let outcome = await execute(deps, record, tool, args, lease, started);
  const policy = boundPolicy(record, tool);
  if (outcome.state === 'uncertain' && policy.execution === 'ledger' && policy.effect === 'read') {
    const code = outcome.error?.code ?? outcome.outcomeCode;
    outcome = {
      ...outcome,
      state: 'failed_retryable',
      error: {
        code,
        message: 'the outcome of the read is unknown; a read runs again harmlessly, so it is retried',
      },
    };
  }
  if (outcome.state !== 'failed_retryable' && record.attempt === 1)
    deps.metrics.count(LEDGER_METRICS.firstExecutions, tool.name);
  return recordOutcome(deps, req, record, tool, lease, outcome);
}

async function execute(
  deps: LedgerDeps,
  record: OperationRecord,
  tool: AnyTool,
  args: unknown,
  lease: Lease,
  started: number,
): Promise<AttemptOutcome> {
  // A worker that stalled between its claim and here (a GC pause, a slow DynamoDB answer) may hold an
  // expired lease: the reconciler may already have decided this attempt and a newer one may be running.
  // Starting now would break "an expired lease means the holder is dead", so the tool is never started
  // at or past its deadline; the outcome is "not applied", whose commit (conditional on `pending` and
  // this attempt) lands only if nobody has moved the record on.
  if (deps.clock() >= lease.deadline) {
    return {
      state: 'failed_retryable',
      outcomeCode: 'deadline_before_start',
      error: {
        code: 'deadline_before_start',
        message: 'the attempt reached its deadline before the tool started',
      },
      durationMs: 0,
    };
  }
  const identity = {
    tenant: record.tenant,
    operationId: record.operation_id,
    reservationId: record.reservation_id,
    toolName: record.tool,
    attempt: record.attempt,
  };
  try {
    const value = await underDeadline(lease.deadline, deps.clock, (signal) =>
      tool.execute(args, toolContext(identity, signal)),
    );
    const { json, code } = sanitize(tool, value, args);
    return { state: 'succeeded', outcomeCode: code, result: json, durationMs: deps.clock() - started };
  } catch (error) {
    return classify(error, deps.clock() - started);
  }
}
