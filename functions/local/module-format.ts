import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SETTINGS } from '../contract/environment';

/**
 * Whether Node loads a tools module as CommonJS, and what to tell its author. tool-ledger's packages
 * are ESM only, and a tools module loaded as CommonJS cannot serve local mode: importing
 * `tool-ledger/tool` from it fails (`Cannot require() ES Module … in a cycle`), and the handlers'
 * `import tools from '#tool-ledger/tools'` would receive `module.exports` rather than the factory.
 * npm 11's `npm init` writes `"type": "commonjs"`, so a newcomer's first `tools/index.ts` is one.
 */

/**
 * Node's codes for an ES module reached through `require()`: a file loaded as CommonJS somewhere in the
 * tools module's imports.
 */
const COMMONJS_FAILURES = new Set([
  'ERR_REQUIRE_CYCLE_MODULE',
  'ERR_REQUIRE_ESM',
  'ERR_REQUIRE_ASYNC_MODULE',
]);

/**
 * Whether a load error is Node refusing an ES module to a CommonJS `require()`.
 *
 * @example
 * ```ts
 * isCommonJsFailure(Object.assign(new Error('…'), { code: 'ERR_REQUIRE_CYCLE_MODULE' })); // true
 * ```
 */
export function isCommonJsFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && COMMONJS_FAILURES.has(code);
}

/**
 * Whether Node (through tsx) loads this TypeScript file as CommonJS: `.cts` always; `.ts` and `.tsx`
 * unless the nearest package.json says `"type": "module"`. JavaScript files are left to Node's own
 * verdict (recent Node versions detect ES module syntax in a `.js` file of a package without `type`),
 * which the load error or the factory check then reports.
 *
 * @example
 * ```ts
 * loadsAsCommonJs('/home/me/project/tools/index.ts'); // true when package.json says "type": "commonjs"
 * loadsAsCommonJs('/home/me/project/tools/index.mts'); // false
 * ```
 */
export function loadsAsCommonJs(file: string): boolean {
  const extension = path.extname(file);
  if (extension === '.cts') return true;
  if (extension !== '.ts' && extension !== '.tsx') return false;
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type !== 'module';
      } catch {
        return false; // an unreadable package.json is Node's to report, with its own message
      }
    }
    if (path.dirname(dir) === dir) return true;
  }
}

/**
 * What to change so that the tools module loads as an ES module: one sentence, naming the renamed file
 * (`.mts` for TypeScript, `.mjs` for JavaScript) relative to `cwd`, as the setting would name it.
 *
 * @example
 * ```ts
 * commonJsAdvice('/p/tools/index.ts', '/p');
 * // 'Node loads it as CommonJS …: set "type": "module" in your package.json, or name the file
 * //  index.mts (TOOL_LEDGER_TOOLS_MODULE=tools/index.mts).'
 * ```
 */
export function commonJsAdvice(file: string, cwd: string): string {
  const esm = file.replace(/\.[cm]?([jt])sx?$/, (_, kind: string) => `.m${kind}s`);
  return (
    'Node loads it as CommonJS (a .ts or .js file in a package whose package.json does not say ' +
    '"type": "module"), and tool-ledger is ESM only: set "type": "module" in your package.json, or name ' +
    `the file ${path.basename(esm)} (${SETTINGS.toolsModule.name}=${asTyped(esm, cwd)}).`
  );
}

/** A path as a user would type it in the setting: relative to `cwd` when inside it, else absolute. */
function asTyped(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}
