import { appendFileSync } from 'node:fs';
import type { TransitionLogLine } from '../../../functions/observability/transition-log';

/**
 * When `TOOL_LEDGER_TRACE_FILE` names a file, every transition line a world logs is appended to it as
 * one JSON line, with a `trace_key` (table, tenant, operation ID: tenants share operation IDs), for
 * the trace checker of `npm run verify` (scripts/verify/trace-check.ts).
 */
export function traceSink(
  table: string,
  tenantOf: (line: TransitionLogLine) => string,
): ((line: TransitionLogLine) => void) | undefined {
  const file = process.env.TOOL_LEDGER_TRACE_FILE;
  if (file === undefined || file === '') return undefined;
  return (line) => {
    appendFileSync(
      file,
      `${JSON.stringify({ ...line, trace_key: `${table}#${tenantOf(line)}#${line.operation_id}` })}\n`,
    );
  };
}

/**
 * Appends, for the same file, how many writes of each record of a schedule landed unseen by their
 * writer (`{"trace_key", "unlogged_writes"}`): the moves the checker may find missing from the lines.
 */
export function traceUnseen(table: string, unseen: ReadonlyMap<string, number>): void {
  const file = process.env.TOOL_LEDGER_TRACE_FILE;
  if (file === undefined || file === '' || unseen.size === 0) return;
  const records = [...unseen].map(([pk, n]) =>
    JSON.stringify({ trace_key: `${table}#${pk}`, unlogged_writes: n }),
  );
  appendFileSync(file, `${records.join('\n')}\n`);
}
