import tools from '#tool-ledger/tools';
import { SETTINGS } from '../contract/environment';
import type { AnyTool } from '../domain/tool';
import { ToolRegistry } from '../tools/registry';
import { toolEnvironment } from '../wiring';
import { commonJsAdvice } from './module-format';
import { LocalSettingsError } from './settings';

/**
 * The deployment's tools, built once when local mode starts, from the module the handlers import, imported
 * as they import it (`#tool-ledger/tools`: the shipped tools or `TOOL_LEDGER_TOOLS_MODULE`; this file is
 * loaded only after functions/local/tools-module.ts pointed the specifier), with the environment they
 * read. The handlers build their own list at their first invocation, where a factory that throws, or
 * returns something other than a list of tools, would answer 500 to every call; built here first, it
 * stops the start instead (exit 2, the module named), and the banner takes its example call from it.
 *
 * The factory's own error message is shown: it is the tool author's text about their own module. Its
 * stack is not.
 *
 * @example
 * ```ts
 * // after the handlers' environment is set (functions/local/stack.ts)
 * const registry = buildStartTools(process.env, '/home/me/project/tools/index.ts');
 * ```
 */
export function buildStartTools(env: NodeJS.ProcessEnv, toolsModule: string | undefined): ToolRegistry {
  const source =
    toolsModule === undefined ? 'the shipped tools' : `${SETTINGS.toolsModule.name}: ${toolsModule}`;
  const factory: unknown = tools;
  if (typeof factory !== 'function') {
    // A module Node loaded as CommonJS arrives as `module.exports`, its `export default` one level down.
    const nested = (factory as { default?: unknown } | null)?.default;
    const advice =
      typeof nested === 'function' && toolsModule !== undefined
        ? ` ${commonJsAdvice(toolsModule, process.cwd())}`
        : '';
    throw new LocalSettingsError(
      `${source}: its default export reaches the handlers as ${kindOf(factory)}, not a tool factory, (env) => Tool[].${advice}`,
    );
  }
  let built: unknown;
  try {
    built = factory(toolEnvironment(env));
  } catch (error) {
    throw new LocalSettingsError(
      `${source}: the tool factory threw when local mode built the tools (${said(error)})`,
    );
  }
  const problem = notAToolList(built);
  if (problem !== undefined) {
    throw new LocalSettingsError(
      `${source}: the tool factory must return a list of tools, (env) => Tool[]; ${problem}`,
    );
  }
  try {
    return new ToolRegistry(built as readonly AnyTool[]);
  } catch (error) {
    throw new LocalSettingsError(`${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Why a factory's return value is not a list of tools, or undefined when it is one. */
function notAToolList(value: unknown): string | undefined {
  if (!Array.isArray(value)) return `it returned ${kindOf(value)}`;
  for (const [index, item] of value.entries()) {
    const tool = item as Partial<AnyTool> | null;
    const missing =
      typeof tool !== 'object' || tool === null
        ? kindOf(item)
        : typeof tool.name !== 'string'
          ? 'no name'
          : typeof tool.execute !== 'function'
            ? 'no execute function'
            : typeof tool.schema?.safeParse !== 'function'
              ? 'no zod schema'
              : tool.effect !== 'write' && tool.effect !== 'read'
                ? `effect ${JSON.stringify(tool.effect)} (write or read)`
                : undefined;
    if (missing !== undefined) {
      const name = typeof tool?.name === 'string' ? ` (${tool.name})` : '';
      return `item ${index + 1}${name} is not a tool: ${missing} (build it with defineTool)`;
    }
  }
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`;
}

function said(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
