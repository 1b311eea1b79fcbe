import { SETTINGS } from '../../functions/contract/environment';
import { tokenWithRole } from '../../functions/local/local-tokens';
import type { Command } from '../command';
import { stringOption } from '../command';
import { UsageError } from '../usage-error';

const ROLES = ['agent', 'approver', 'operator'] as const;

/**
 * `tool-ledger token`: prints a bearer token local mode made for its data folder, for a shell or a script
 * (`export TOKEN=$(npx tool-ledger token)`). Reads the data folder's tokens file only; sends nothing.
 */
export const tokenCommand: Command = {
  name: 'token',
  summary: 'print a token local mode made for its data folder (export TOKEN=$(npx tool-ledger token))',
  usage: 'token [--role agent|approver|operator]',
  description:
    'Prints the bearer token of the given role (default agent) that `npm start` made at the data\n' +
    `folder's first start, read from its tokens file (${SETTINGS.dataDir.name}, else .data in this folder).\n` +
    'Tokens set with TOOL_LEDGER_TOKENS are yours and are not kept there. Sends nothing.\n\n' +
    'Options:\n' +
    '  --role R   agent (default; it also has the operator role), approver or operator',
  options: { role: { type: 'string' } },
  args: { min: 0, max: 0 },
  async run({ values, out, localTokens }) {
    const role = stringOption(values, 'role') ?? 'agent';
    if (!(ROLES as readonly string[]).includes(role)) {
      throw new UsageError(`--role must be one of ${ROLES.join(', ')}`, 'token');
    }
    const spec = localTokens?.();
    const token = spec === undefined ? undefined : tokenWithRole(spec, role);
    if (token === undefined) {
      throw new UsageError(
        `no ${role} token in local mode's data folder: start local mode (npm start) first, in this folder or with ${SETTINGS.dataDir.name} set`,
        'token',
      );
    }
    out.print(token);
  },
};
