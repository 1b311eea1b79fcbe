import tools from '#tool-ledger/tools';
import { createReconcilerHandler } from '../reconciler/reconciler-handler';
import { buildRuntime } from '../wiring';

/**
 * The scheduled reconciler Lambda (SPEC §7): the deployment's tools module, wired from the
 * environment, behind the reconciler's front door (functions/reconciler/reconciler-handler.ts).
 */
export const handler = createReconcilerHandler(() => buildRuntime(tools));
