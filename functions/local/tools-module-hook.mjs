// Module resolution hook for local mode's TOOL_LEDGER_TOOLS_MODULE (registered by tools-module.ts).
// The handlers import their tools as `#tool-ledger/tools`; on AWS the construct's esbuild alias points
// that specifier at the deployment's tools module, and here this hook does the same, so local mode runs
// exactly the module a deployment bundles. Plain JavaScript: hooks run on Node's loader thread.

/** @type {string | undefined} */
let target;

/** @param {{ specifier: string, url: string }} data */
export function initialize(data) {
  if (data && typeof data.url === 'string') target = data.url;
}

/**
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<unknown>} nextResolve
 */
export async function resolve(specifier, context, nextResolve) {
  if (target !== undefined && specifier === '#tool-ledger/tools') return { url: target, shortCircuit: true };
  return nextResolve(specifier, context);
}
