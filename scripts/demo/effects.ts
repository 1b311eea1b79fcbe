import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { WebhookTarget } from '../webhook-target';
import { actionTag, type DemoAction } from './script';

/**
 * What actually happened, read from the world rather than from anyone's report: files in the
 * workspace, lines in the log files, and the effects the webhook receivers applied. Both runs are
 * measured the same way.
 */

/** The effects of one action. */
export interface ActionEffects {
  action: DemoAction;
  /** 1 when the action's effect is there once; more is a duplicate, 0 a missing effect. */
  effects: number;
  /** Webhooks only: requests the receiver got for the action's path. */
  hits?: number;
  /** Whether the observed state is exactly what the action intended (a file's content). */
  intact: boolean;
}

/** The effects of a whole run. */
export interface EffectsReport {
  perAction: ActionEffects[];
  /** Files in the workspace (the ledger's own `.tool-ledger/` folder aside). */
  files: number;
  /** Lines in the files the append actions name. */
  lines: number;
  /** Effects the webhook receivers applied. */
  webhookEffects: number;
  /** Requests the webhook receivers got. */
  webhookHits: number;
  /** Distinct `Idempotency-Key` values the receivers saw. */
  distinctKeys: number;
  /** files + lines + webhook effects. */
  total: number;
}

/** The ledger's bookkeeping inside the workspace (append markers); not an effect of any action. */
const LEDGER_DIR = '.tool-ledger';

/**
 * Observes the effects of `actions` in `workspaceDir` and at the receivers.
 *
 * @example
 * ```ts
 * const report = await observeEffects(workspaceDir, { plain, idempotent }, ACTIONS);
 * report.total; // equals ACTIONS.length when every action happened exactly once
 * ```
 */
export async function observeEffects(
  workspaceDir: string,
  targets: Record<'plain' | 'idempotent', WebhookTarget>,
  actions: readonly DemoAction[],
): Promise<EffectsReport> {
  const files = await listFiles(workspaceDir);
  const logPaths = [...new Set(actions.flatMap((a) => (a.tool === 'workspace.append_line' ? [a.path] : [])))];
  const logLines = new Map<string, string[]>();
  for (const path of logPaths) {
    const text = files.includes(path) ? await readFile(join(workspaceDir, path), 'utf8') : '';
    logLines.set(
      path,
      text.split('\n').filter((line) => line.length > 0),
    );
  }
  const perAction: ActionEffects[] = [];
  for (const action of actions) {
    switch (action.tool) {
      case 'workspace.write_file': {
        const present = files.includes(action.path);
        const content = present ? await readFile(join(workspaceDir, action.path), 'utf8') : undefined;
        perAction.push({ action, effects: present ? 1 : 0, intact: content === action.content });
        break;
      }
      case 'workspace.append_line': {
        const tag = `${actionTag(action)} `;
        const mine = (logLines.get(action.path) ?? []).filter((line) => line.startsWith(tag));
        perAction.push({ action, effects: mine.length, intact: mine.every((line) => line === action.line) });
        break;
      }
      case 'webhook.post': {
        const target = targets[action.receiver];
        perAction.push({
          action,
          effects: target.effects(action.path),
          hits: target.count(action.path),
          intact: true,
        });
        break;
      }
    }
  }
  const lines = [...logLines.values()].reduce((sum, l) => sum + l.length, 0);
  const webhookEffects = targets.plain.effects() + targets.idempotent.effects();
  return {
    perAction,
    files: files.filter((f) => !logPaths.includes(f)).length,
    lines,
    webhookEffects,
    webhookHits: targets.plain.hits.length + targets.idempotent.hits.length,
    distinctKeys: targets.plain.distinctKeys() + targets.idempotent.distinctKeys(),
    total: files.filter((f) => !logPaths.includes(f)).length + lines + webhookEffects,
  };
}

/** Regular files under `root`, as relative paths with `/`, the ledger's folder left out. */
async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)).split('\\').join('/'))
    .filter((path) => path !== LEDGER_DIR && !path.startsWith(`${LEDGER_DIR}/`));
}
