import { type Command, flag, operationIdArg } from '../command';
import { operationText } from '../operation-text';

/**
 * `tool-ledger show <id>`: one operation of the tenant (`GET /v1/operations/{id}`). Argument values
 * stay hidden unless `--arguments` asks for them, so a screen shared while investigating shows the
 * digest, not the content.
 */
export const showCommand: Command = {
  name: 'show',
  summary: 'show one operation: state, digest, attempts, approval, resolution, history',
  usage: 'show <id> [--arguments] [--history]',
  description:
    'Shows one operation of your tenant: state, full arguments digest, attempt, approval, resolution,\n' +
    'late outcome, error and result. Any role of the tenant may read it.\n\n' +
    'Options:\n' +
    '  --arguments   include the normalized argument values (approver or operator role)\n' +
    '  --history     include the state history (every transition, by whom, with its code)',
  options: {
    arguments: { type: 'boolean' },
    history: { type: 'boolean' },
  },
  args: { min: 1, max: 1 },
  async run({ api, args, values, json, out, now }) {
    const id = operationIdArg(args[0], 'show');
    const op = await (await api()).get(id, {
      arguments: flag(values, 'arguments'),
      history: flag(values, 'history'),
    });
    if (json) out.json(op);
    else out.print(operationText(op, now));
  },
};
