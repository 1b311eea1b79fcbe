import { existsSync } from 'node:fs';
import { register } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SETTINGS } from '../contract/environment';
import { TOOLS_MODULE_SPECIFIER } from '../contract/tools-module';
import { commonJsAdvice, isCommonJsFailure, loadsAsCommonJs } from './module-format';
import { LocalSettingsError } from './settings';

/**
 * Points local mode at a deployment's own tools (`TOOL_LEDGER_TOOLS_MODULE`, the same module the
 * construct's `toolsModule` bundles): checks that the file exists, is an ES module (a TypeScript file
 * Node would load as CommonJS is refused with what to change), and default-exports a tool factory,
 * then makes `#tool-ledger/tools` resolve to it for the handlers imported afterwards. A bad module is a
 * settings error (exit 2 with the path), never a 500 at the first request. Without the variable the
 * shipped tools are used.
 *
 * @example
 * ```ts
 * await useToolsModule(process.env.TOOL_LEDGER_TOOLS_MODULE, process.cwd()); // before importing handlers
 * ```
 */
export async function useToolsModule(
  configured: string | undefined,
  cwd: string,
): Promise<string | undefined> {
  if (configured === undefined || configured.trim() === '') return undefined;
  const file = path.resolve(cwd, configured.trim());
  if (!existsSync(file)) {
    throw new LocalSettingsError(`${SETTINGS.toolsModule.name}: no such file: ${file}`);
  }
  if (loadsAsCommonJs(file)) {
    throw new LocalSettingsError(`${SETTINGS.toolsModule.name}: ${file}: ${commonJsAdvice(file, cwd)}`);
  }
  const url = pathToFileURL(file).href;
  let loaded: { default?: unknown };
  try {
    loaded = await import(url);
  } catch (error) {
    const hint = isCommonJsFailure(error)
      ? ' A file it imports is loaded as CommonJS and requires an ES module: name that file .mts (or .mjs), ' +
        'or set "type": "module" in its package.json.'
      : '';
    throw new LocalSettingsError(
      `${SETTINGS.toolsModule.name}: ${file} could not be loaded (${error instanceof Error ? error.name : 'error'}: ${
        error instanceof Error ? error.message : String(error)
      }).${hint}`,
    );
  }
  if (typeof loaded.default !== 'function') {
    throw new LocalSettingsError(
      `${SETTINGS.toolsModule.name}: ${file} must default-export a tool factory, (env) => Tool[] ` +
        '(add `export default tools;`)',
    );
  }
  register(new URL('./tools-module-hook.mjs', import.meta.url), {
    data: { specifier: TOOLS_MODULE_SPECIFIER, url },
  });
  return file;
}
