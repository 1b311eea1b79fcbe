import type { Resolution } from '../../client/tool-ledger-client';
import { type Command, integerOption, operationIdArg, stringOption } from '../command';
import { clean } from '../format';
import { UsageError } from '../usage-error';

const OUTCOMES = ['applied', 'not_applied', 'failed'] as const;

/** What each outcome makes of the operation (SPEC §5, resolution route). */
const MEANING: Record<Resolution['outcome'], string> = {
  applied: 'the effect happened: succeeded, with --result as its stored result',
  not_applied: 'the effect did not happen: failed_retryable, and it is retried with the same key',
  failed: 'the effect did not happen and must not be retried: failed_terminal',
};

/**
 * `tool-ledger resolve <id> <outcome>`: an operator's verdict on an `uncertain` or
 * `needs_reconciliation` operation, after checking the target by hand (`POST
 * /v1/operations/{id}/resolution`). `--attempt` makes it apply only while the operation is still at the
 * attempt that was checked, so a retry that started meanwhile is never resolved by mistake.
 */
export const resolveCommand: Command = {
  name: 'resolve',
  summary: 'resolve an uncertain or needs_reconciliation operation by hand',
  usage: 'resolve <id> applied|not_applied|failed [--result JSON] [--attempt N]',
  description:
    'Records what you found on the target system for an uncertain or needs_reconciliation operation.\n' +
    'Needs the operator role. Outcomes:\n' +
    OUTCOMES.map((o) => `  ${o.padEnd(12)} ${MEANING[o]}`).join('\n') +
    '\n\nOptions:\n' +
    '  --result JSON  the result to store (applied only; JSON text, e.g. \'{"sha":"abc"}\')\n' +
    '  --attempt N    apply only while the operation is still at attempt N (as `show` printed it)',
  options: {
    result: { type: 'string' },
    attempt: { type: 'string' },
  },
  args: { min: 2, max: 2 },
  async run({ api, args, values, json, out }) {
    const id = operationIdArg(args[0], 'resolve');
    const outcome = args[1] as string;
    if (!(OUTCOMES as readonly string[]).includes(outcome)) {
      throw new UsageError(`the outcome must be one of: ${OUTCOMES.join(', ')}`, 'resolve');
    }
    const resolution: Resolution = { outcome: outcome as Resolution['outcome'] };
    const rawResult = stringOption(values, 'result');
    if (rawResult !== undefined) {
      if (outcome !== 'applied')
        throw new UsageError('--result only goes with the outcome applied', 'resolve');
      try {
        resolution.result = JSON.parse(rawResult) as unknown;
      } catch {
        throw new UsageError('--result must be JSON (quote it for the shell)', 'resolve');
      }
    }
    const attempt = integerOption(values, 'attempt', 'resolve');
    if (attempt !== undefined) resolution.attempt = attempt;
    const op = await (await api()).resolve(id, resolution);
    if (json) {
      out.json(op);
      return;
    }
    const by = typeof op.resolved_by === 'string' ? ` (resolved by ${clean(op.resolved_by)})` : '';
    out.print(`resolved: ${clean(op.operation_id)} is now ${clean(op.state)}, attempt ${op.attempt}${by}`);
  },
};
