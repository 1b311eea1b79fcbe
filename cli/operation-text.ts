import type { Operation } from '../client/api-types';
import { clean, fields, inlineJson, table, when } from './format';

/** One entry of the state history the API returns with `include=history`. */
interface HistoryEntry {
  at?: unknown;
  from?: unknown;
  to?: unknown;
  attempt?: unknown;
  by?: unknown;
  code?: unknown;
}

/**
 * An operation as an operator reads it (`tool-ledger show`, and the preview before a decision): state,
 * full digest, attempts, approval, resolution, late outcome, error and result; the arguments only
 * when the API included them (it does so only when asked, and only for approvers and operators); the
 * history as a table when included.
 *
 * @example
 * ```ts
 * out.print(operationText(await api.get(id, { history: true }), Date.now()));
 * ```
 */
export function operationText(op: Operation, now: number): string {
  const rows: [string, string][] = [
    ['operation', clean(op.operation_id)],
    ['tool', clean(op.tool)],
    ['state', clean(op.state)],
    ['digest', clean(op.arguments_digest)],
    ['attempt', String(op.attempt)],
    [
      'executed by',
      op.execution === 'caller'
        ? 'its caller (an agent claims each attempt and runs the effect)'
        : 'the ledger',
    ],
  ];
  if (typeof op.agent_run_id === 'string') rows.push(['agent run', clean(op.agent_run_id)]);
  rows.push(['created', when(op.created_at, now)]);
  if (op.completed_at) rows.push(['completed', when(op.completed_at, now)]);
  if (typeof op.lease_expires_at === 'string')
    rows.push([op.execution === 'caller' ? 'claim until' : 'lease until', when(op.lease_expires_at, now)]);
  if (typeof op.downstream_key === 'string') rows.push(['downstream key', clean(op.downstream_key)]);
  const approval = approvalText(op, now);
  if (approval) rows.push(['approval', approval]);
  // The deadline stays on the record after the decision; it only means something while nobody decided.
  if (op.state === 'awaiting_approval' && typeof op.approval_deadline === 'string') {
    rows.push(['approve by', when(op.approval_deadline, now)]);
  }
  const resolution = resolutionText(op);
  if (resolution) rows.push(['resolution', resolution]);
  const late = lateOutcomeText(op.late_outcome);
  if (late) rows.push(['late outcome', late]);
  if (op.error) {
    const status = typeof op.error.status === 'number' ? ` (status ${op.error.status})` : '';
    rows.push(['error', `${clean(String(op.error.code))}${status}: ${clean(String(op.error.message))}`]);
  }
  if (op.result !== null && op.result !== undefined) rows.push(['result', inlineJson(op.result)]);
  if ('arguments' in op) rows.push(['arguments', inlineJson(op.arguments, 2000)]);
  let text = fields(rows);
  if (Array.isArray(op.history)) text += `\nhistory\n${historyText(op.history as HistoryEntry[])}`;
  return text;
}

/** Who decided the approval, what, when, on which digest. */
function approvalText(op: Operation, now: number): string | undefined {
  const approval = op.approval;
  if (typeof approval !== 'object' || approval === null) return undefined;
  const a = approval as Record<string, unknown>;
  const verb =
    a.decision === 'approve' ? 'approved' : a.decision === 'reject' ? 'rejected' : clean(String(a.decision));
  return `${verb} by ${clean(String(a.by))} at ${when(String(a.at), now)}\ndigest ${clean(String(a.arguments_digest))}`;
}

/** How an unknown outcome was settled: by an operator (`resolved_by`) or by the reconciler asking the target. */
function resolutionText(op: Operation): string | undefined {
  const parts: string[] = [];
  if (typeof op.resolved_by === 'string') parts.push(`resolved by ${clean(op.resolved_by)}`);
  if (op.reconciled === true)
    parts.push(
      op.execution === 'caller' && typeof op.reconciled_by === 'string'
        ? `reconciled by ${clean(op.reconciled_by)} (the caller's verdict)`
        : 'reconciled (the reconciler asked the target)',
    );
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** An outcome reported by the owner of a superseded attempt: stored, never applied (the contract, §2). */
function lateOutcomeText(late: unknown): string | undefined {
  if (typeof late !== 'object' || late === null) return undefined;
  const l = late as Record<string, unknown>;
  return (
    `attempt ${clean(String(l.attempt))} reported ${clean(String(l.state))} (${clean(String(l.outcome_code))}) ` +
    `at ${clean(String(l.at))}; not applied: that attempt had been superseded`
  );
}

function historyText(history: readonly HistoryEntry[]): string {
  if (history.length === 0) return '  (none)\n';
  const rows = history.map((h) => [
    clean(String(h.at ?? '-')),
    `${h.from === null || h.from === undefined ? '(new)' : clean(String(h.from))} -> ${clean(String(h.to))}`,
    String(h.attempt ?? '-'),
    clean(String(h.by ?? '-')),
    h.code === undefined ? '' : clean(String(h.code)),
  ]);
  return table(
    ['  AT', 'TRANSITION', 'ATTEMPT', 'BY', 'CODE'],
    rows.map(([first, ...rest]) => [`  ${first}`, ...rest]),
  );
}
