import type { EffectsReport } from './effects';
import type { DemoStep } from './script';

/**
 * The demo's verdict as text: the two runs side by side, then the same effects by fault, then one
 * sentence. Figures only; every one is measured by the caller.
 */

/** One run's figures. */
export interface RunFigures {
  actions: number;
  /** With the ledger: the sum of `attempt` over the operations. Without: effects started. */
  attempts: number;
  effects: EffectsReport;
  /** Ledger only. */
  replays?: number;
  conflicts?: number;
  reconciled?: number;
}

/**
 * Renders both runs.
 *
 * @example
 * ```ts
 * console.log(renderComparison(STEPS, withLedger, withoutLedger));
 * ```
 */
export function renderComparison(steps: readonly DemoStep[], ledger: RunFigures, naive: RunFigures): string {
  const duplicates = (run: RunFigures) =>
    run.effects.perAction.reduce((sum, a) => sum + Math.max(0, a.effects - 1), 0);
  const missing = (run: RunFigures) => run.effects.perAction.filter((a) => a.effects === 0).length;
  const dash = (value: number | undefined) => (value === undefined ? '-' : String(value));
  const rows: [string, string, string][] = [
    ['actions intended', String(ledger.actions), String(naive.actions)],
    ['attempts made', String(ledger.attempts), String(naive.attempts)],
    ['effects observed', String(ledger.effects.total), String(naive.effects.total)],
    ['  files written', String(ledger.effects.files), String(naive.effects.files)],
    ['  lines appended', String(ledger.effects.lines), String(naive.effects.lines)],
    ['  webhook effects', String(ledger.effects.webhookEffects), String(naive.effects.webhookEffects)],
    [
      '  webhook requests (total hits)',
      String(ledger.effects.webhookHits),
      String(naive.effects.webhookHits),
    ],
    ['  distinct Idempotency-Keys', String(ledger.effects.distinctKeys), String(naive.effects.distinctKeys)],
    ['duplicate effects', String(duplicates(ledger)), String(duplicates(naive))],
    ['missing effects', String(missing(ledger)), String(missing(naive))],
    ['replays', dash(ledger.replays), dash(naive.replays)],
    ['conflicts', dash(ledger.conflicts), dash(naive.conflicts)],
    ['reconciled outcomes', dash(ledger.reconciled), dash(naive.reconciled)],
  ];
  const byFault: [string, string, string, string][] = steps.map((step) => {
    const sum = (run: RunFigures) =>
      run.effects.perAction.filter((a) => a.action.step === step.step).reduce((s, a) => s + a.effects, 0);
    return [
      `step ${step.step}: ${step.title}`,
      String(step.actions.length),
      String(sum(ledger)),
      String(sum(naive)),
    ];
  });
  const head = ['', 'with tool-ledger', 'without (bypass)'];
  const width = Math.max(...rows.map((r) => r[0].length), ...byFault.map((r) => r[0].length));
  const line = (cells: string[], widths: number[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ');
  const out = [
    line(head, [width, 16, 16]),
    ...rows.map((r) => line(r, [width, 16, 16])),
    '',
    line(['effects by fault', 'actions', 'with tool-ledger', 'without'], [width, 7, 16, 8]),
    ...byFault.map((r) => line(r, [width, 7, 16, 8])),
    '',
    `with tool-ledger: ${ledger.actions} actions, ${ledger.effects.total} effects; ` +
      `without: ${naive.actions} actions, ${naive.effects.total} effects`,
  ];
  return out.join('\n');
}
