import { type Command, Declined, flag, operationIdArg, stringOption } from '../command';
import { clean } from '../format';
import { operationText } from '../operation-text';
import { UsageError } from '../usage-error';

type Decision = 'approve' | 'reject';

const PAST: Record<Decision, string> = { approve: 'approved', reject: 'rejected' };

/**
 * `tool-ledger approve|reject <id>`: an approver's decision, bound to an arguments digest (`POST
 * /v1/operations/{id}/approval`). The operation is read and shown first (tool, digest, deadline, and
 * the argument values with `--arguments`), then:
 *
 * ```
 * --digest D           decide on D; the API refuses (approval_mismatch) if D is not the operation's
 * --yes                decide on the digest just shown, without asking
 * neither, a terminal  ask "[y/N]", then decide on the digest just shown
 * neither, no terminal refuse (exit 2) before sending anything: no one confirmed
 * ```
 *
 * The digest sent is always one a person saw or gave, so an approval can never ride on arguments that
 * nobody looked at.
 */
function decisionCommand(decision: Decision): Command {
  const verb = decision === 'approve' ? 'Approve' : 'Reject';
  return {
    name: decision,
    summary:
      decision === 'approve'
        ? 'approve an operation awaiting approval (it is queued and runs once)'
        : 'reject an operation awaiting approval (it never runs)',
    usage: `${decision} <id> [--digest D] [--arguments] [--yes]`,
    description:
      `${verb}s an operation that is awaiting approval. Needs the approver role; you may not decide on\n` +
      'an operation you requested yourself. The operation is shown first (tool, digest, deadline).\n\n' +
      'Options:\n' +
      '  --digest D    decide on this arguments digest (from `tool-ledger show`); the API refuses if the\n' +
      '                operation’s arguments have another digest\n' +
      '  --arguments   also show the argument values before deciding\n' +
      '  -y, --yes     do not ask for confirmation (decide on the digest shown)\n\n' +
      'Without --digest or --yes, the CLI asks on the terminal, and refuses when there is none.',
    options: {
      digest: { type: 'string' },
      arguments: { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
    },
    args: { min: 1, max: 1 },
    role: 'approver',
    async run({ api, args, values, json, out, confirm, now }) {
      const id = operationIdArg(args[0], decision);
      const given = stringOption(values, 'digest');
      const yes = flag(values, 'yes');
      if (given !== undefined && !/^v\d+:[0-9a-f]{64}$/.test(given)) {
        throw new UsageError(
          '--digest must be a full arguments digest (v1: and 64 hex characters)',
          decision,
        );
      }
      if (given === undefined && !yes && !confirm) {
        throw new UsageError(
          `${decision} needs a confirmation and there is no terminal to ask on: pass --digest <digest> ` +
            '(see `tool-ledger show <id>`) or --yes',
          decision,
        );
      }
      const ledger = await api();
      const op = await ledger.get(id, { arguments: flag(values, 'arguments') });
      // In --json mode the preview is for the person watching; stdout stays one JSON document.
      const show = json ? out.note : out.print;
      show(operationText(op, now));
      if (op.state !== 'awaiting_approval') {
        out.note(
          `note: the operation is ${clean(op.state)}, not awaiting_approval; the API decides what that means`,
        );
      }
      let digest = given;
      if (digest === undefined) {
        if (
          !yes &&
          confirm &&
          !(await confirm(`${verb} ${clean(op.tool)} with digest ${clean(op.arguments_digest)}?`))
        ) {
          throw new Declined(`not ${PAST[decision]}: nothing was decided`);
        }
        digest = op.arguments_digest;
      }
      const decided =
        decision === 'approve' ? await ledger.approve(id, digest) : await ledger.reject(id, digest);
      if (json) out.json(decided);
      else out.print(`${PAST[decision]}: ${clean(decided.operation_id)} is now ${clean(decided.state)}`);
    },
  };
}

/** `tool-ledger approve <id>`. */
export const approveCommand: Command = decisionCommand('approve');

/** `tool-ledger reject <id>`. */
export const rejectCommand: Command = decisionCommand('reject');
