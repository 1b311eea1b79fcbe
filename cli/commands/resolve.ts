import type { Resolution } from '../../client/tool-ledger-client';
import { type Command, Declined, flag, integerOption, operationIdArg, stringOption } from '../command';
import { clean } from '../format';
import { operationText } from '../operation-text';
import { UsageError } from '../usage-error';

const OUTCOMES = ['applied', 'not_applied', 'failed'] as const;

/** What each outcome makes of the operation (the contract, §5, resolution route). */
const MEANING: Record<Resolution['outcome'], string> = {
  applied: 'the effect happened: succeeded, with --result as its stored result',
  not_applied: 'the effect did not happen: failed_retryable, and it is retried with the same key',
  failed: 'the effect did not happen and must not be retried: failed_terminal',
};

/**
 * `tool-ledger resolve <id> <outcome>`: an operator's verdict on an `uncertain` or
 * `needs_reconciliation` operation, after checking the target by hand (`POST
 * /v1/operations/{id}/resolution`). A verdict is on one attempt, and the API requires it, so the
 * operation is read and shown first, then:
 *
 * ```
 * --attempt N          resolve attempt N (as `show` printed it); refused if the operation moved on
 * --yes                resolve the attempt just shown, without asking
 * neither, a terminal  ask "[y/N]", then resolve the attempt just shown
 * neither, no terminal refuse (exit 2) before sending anything: no one confirmed
 * ```
 *
 * The attempt sent is always one a person saw or gave, so a resolution run again after its
 * `not_applied` started the next attempt is refused (`state_changed`) instead of starting another.
 */
export const resolveCommand: Command = {
  name: 'resolve',
  summary: 'resolve an uncertain or needs_reconciliation operation by hand',
  usage: 'resolve <id> applied|not_applied|failed [--result JSON] [--attempt N] [--yes]',
  description:
    'Records what you found on the target system for an uncertain or needs_reconciliation operation.\n' +
    'Needs the operator role. The operation is shown first (state, attempt). Outcomes:\n' +
    OUTCOMES.map((o) => `  ${o.padEnd(12)} ${MEANING[o]}`).join('\n') +
    '\n\nOptions:\n' +
    '  --result JSON  the result to store (applied only; JSON text, e.g. \'{"sha":"abc"}\')\n' +
    '  --attempt N    the attempt you checked (as `show` printed it); refused if the operation has\n' +
    '                 moved to another attempt since\n' +
    '  -y, --yes      do not ask for confirmation (resolve the attempt shown)\n\n' +
    'Without --attempt or --yes, the CLI asks on the terminal, and refuses when there is none.',
  options: {
    result: { type: 'string' },
    attempt: { type: 'string' },
    yes: { type: 'boolean', short: 'y' },
  },
  args: { min: 2, max: 2 },
  async run({ api, args, values, json, out, confirm, now }) {
    const id = operationIdArg(args[0], 'resolve');
    const outcome = args[1] as string;
    if (!(OUTCOMES as readonly string[]).includes(outcome)) {
      throw new UsageError(`the outcome must be one of: ${OUTCOMES.join(', ')}`, 'resolve');
    }
    let result: unknown;
    const rawResult = stringOption(values, 'result');
    if (rawResult !== undefined) {
      if (outcome !== 'applied')
        throw new UsageError('--result only goes with the outcome applied', 'resolve');
      try {
        result = JSON.parse(rawResult) as unknown;
      } catch {
        throw new UsageError('--result must be JSON (quote it for the shell)', 'resolve');
      }
    }
    const given = integerOption(values, 'attempt', 'resolve');
    const yes = flag(values, 'yes');
    if (given === undefined && !yes && !confirm) {
      throw new UsageError(
        'resolve needs the attempt you checked and there is no terminal to ask on: pass --attempt <n> ' +
          '(see `tool-ledger show <id>`) or --yes',
        'resolve',
      );
    }
    const ledger = await api();
    const shown = await ledger.get(id);
    // In --json mode the preview is for the person watching; stdout stays one JSON document.
    (json ? out.note : out.print)(operationText(shown, now));
    let attempt = given;
    if (attempt === undefined) {
      if (
        !yes &&
        confirm &&
        !(await confirm(`Resolve ${clean(shown.operation_id)} attempt ${shown.attempt} as ${outcome}?`))
      ) {
        throw new Declined('not resolved: nothing was decided');
      }
      attempt = shown.attempt;
    }
    const resolution: Resolution = { outcome: outcome as Resolution['outcome'], attempt };
    if (rawResult !== undefined) resolution.result = result;
    const op = await ledger.resolve(id, resolution);
    if (json) {
      out.json(op);
      return;
    }
    const by = typeof op.resolved_by === 'string' ? ` (resolved by ${clean(op.resolved_by)})` : '';
    out.print(`resolved: ${clean(op.operation_id)} is now ${clean(op.state)}, attempt ${op.attempt}${by}`);
  },
};
