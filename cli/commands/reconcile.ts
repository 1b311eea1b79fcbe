import type { Command } from '../command';
import { clean } from '../format';

/**
 * `tool-ledger reconcile`: one reconciliation pass now (`POST /v1/reconciliations`), the same pass the
 * schedule runs, for when an operator does not want to wait for the next tick. The API answers when the
 * pass is done (API Gateway cannot stream a Lambda's progress), so the per-shard lines are printed
 * together at the end, followed by the totals.
 */
export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: 'run one reconciliation pass now over your tenant (what the schedule does), with the counts',
  usage: 'reconcile',
  description:
    'Runs one reconciler pass now: expired leases become uncertain, uncertain operations are checked\n' +
    'with their target, lost queue messages and retries are enqueued again, expired approvals are\n' +
    'rejected. Needs the operator role.\n\n' +
    "The pass covers the caller's own tenant only; the scheduled pass covers every tenant. Every decision\n" +
    'is a conditional write, so running it now only does sooner what the schedule would do, and a pass\n' +
    'racing the schedule skips what the other already did. A check that would not end in time is left for\n' +
    'the schedule and the pass goes on; a pass that did not do everything says so, and the next scheduled\n' +
    'pass takes the rest. The answer holds counts only.',
  options: {},
  args: { min: 0, max: 0 },
  async run({ api, json, out }) {
    const report = await (await api()).reconcile();
    if (json) {
      out.json(report);
      return;
    }
    for (const shard of report.shards) {
      out.print(`shard ${clean(shard.shard)}: read ${shard.read}, acted ${shard.acted}`);
    }
    const acted = report.shards.reduce((sum, shard) => sum + shard.acted, 0);
    const actions = Object.entries(report.actions)
      .filter(([name]) => name !== 'skipped')
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, count]) => `${clean(name)} ${count}`);
    out.print(
      `pass done: read ${report.read} in ${report.pages} page${report.pages === 1 ? '' : 's'}, ` +
        `acted on ${acted}, skipped ${report.skipped}` +
        (report.deferred ? `, left for the schedule ${report.deferred}` : '') +
        (actions.length > 0 ? ` (${actions.join(', ')})` : ''),
    );
    if (report.complete === false) {
      out.print(
        'the pass did not get to everything within its time (slow checks are left for the schedule); ' +
          'the next scheduled pass takes the rest',
      );
    }
  },
};
