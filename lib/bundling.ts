import { existsSync } from 'node:fs';
import path from 'node:path';
import { type BundlingOptions, LogLevel, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';
import { TOOLS_MODULE_SPECIFIER } from '../functions/contract/tools-module';
import { UPSTREAMS_MODULE_SPECIFIER } from '../functions/contract/upstreams-module';

/**
 * How every handler is bundled: one place, so that `scripts/size.ts` measures exactly what `cdk deploy`
 * ships, and so that the tools module is swapped in the same way for all three functions.
 */

/**
 * The import specifier the handlers use for the tools module. It is a package.json subpath import, so
 * Node, tsx, TypeScript and vitest resolve it to the shipped tools without any plugin; the construct's
 * esbuild alias replaces it with the module an infrastructure team configures.
 */
export const TOOLS_IMPORT = TOOLS_MODULE_SPECIFIER;

/**
 * The import specifier of the MCP gateway in the handlers (functions/wiring.ts). Bundles of a deployment
 * that names no MCP upstreams get a stand-in instead, so that the MCP SDK's client and Ajv stay out of
 * every handler's bundle and cold start.
 */
export const UPSTREAMS_IMPORT = UPSTREAMS_MODULE_SPECIFIER;

/** The repository root: handlers and the default tools module are found from here. */
export const PROJECT_ROOT = path.resolve(import.meta.dirname, '..');

/** Lock files NodejsFunction understands, in the order it prefers them. */
const LOCK_FILES = ['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'bun.lockb'] as const;

/**
 * The project NodejsFunction bundles from: the folder holding the nearest lock file at or above this
 * package. In this repository that is the repository itself; when tool-ledger is installed as a package
 * it is the consumer's project (npm ships no lock file inside a package), which also holds the
 * consumer's tools module, so both are inside the bundling root.
 *
 * @example
 * ```ts
 * const { projectRoot, lockFile } = bundlingProject(); // e.g. /home/me/infra, /home/me/infra/package-lock.json
 * ```
 */
export function bundlingProject(from: string = PROJECT_ROOT): { projectRoot: string; lockFile: string } {
  for (let dir = from; ; dir = path.dirname(dir)) {
    for (const name of LOCK_FILES) {
      const lockFile = path.join(dir, name);
      if (existsSync(lockFile)) return { projectRoot: dir, lockFile };
    }
    if (path.dirname(dir) === dir) {
      throw new Error(
        `no lock file (${LOCK_FILES.join(', ')}) at or above ${from}: the Lambda bundles need one; run npm install in your project`,
      );
    }
  }
}

/** The shipped tools module (the contract, §4), used when `toolsModule` is not set. */
export const DEFAULT_TOOLS_MODULE = path.join(PROJECT_ROOT, 'functions', 'tools', 'builtin.ts');

/** The gateway to the deployment's MCP upstreams, and its stand-in for deployments without any. */
export const UPSTREAMS_MODULES = {
  gateway: path.join(PROJECT_ROOT, 'functions', 'mcp', 'gateway.ts'),
  none: path.join(PROJECT_ROOT, 'functions', 'mcp', 'no-upstreams.ts'),
} as const;

/** The handler entry files, by function. */
export const HANDLER_ENTRIES = {
  api: path.join(PROJECT_ROOT, 'functions', 'handlers', 'api.ts'),
  executor: path.join(PROJECT_ROOT, 'functions', 'handlers', 'executor.ts'),
  reconciler: path.join(PROJECT_ROOT, 'functions', 'handlers', 'reconciler.ts'),
} as const;

/** esbuild target; matches the Lambda runtime (Node.js 22). */
export const BUNDLE_TARGET = 'node22';

/** The Lambda runtime provides the AWS SDK v3, so bundles leave it out (about 30 KiB instead of 560). */
export const SDK_EXTERNALS: readonly string[] = ['@aws-sdk/*'];

/**
 * ESM bundles have no `require`; a CommonJS dependency that requires a Node built-in would throw
 * "Dynamic require is not supported" at cold start without this shim.
 */
export const ESM_REQUIRE_BANNER =
  "import{createRequire as __toolLedgerRequire}from'node:module';const require=__toolLedgerRequire(import.meta.url);";

/** Prefer the ESM build of dependencies: smaller and tree-shakeable. */
export const MAIN_FIELDS: readonly string[] = ['module', 'main'];

/** What varies between deployments. */
export interface BundleSettings {
  /** Absolute path of the module that default-exports the `ToolFactory`. */
  toolsModule: string;
  /** Bundle the AWS SDK instead of using the runtime's copy. */
  bundleAwsSdk: boolean;
  /** The deployment names MCP upstreams: bundle the gateway. @default false */
  upstreams?: boolean;
  /** Files written next to the bundle (name → content), e.g. configuration too large for the environment. */
  files?: Readonly<Record<string, string>>;
}

/**
 * Shell commands that write `files` into the bundle's output folder. The content travels base64-encoded
 * through one `node -e`, so no shell quoting can alter it, on any platform local bundling runs on.
 */
function writeFilesCommands(outputDir: string, files: Readonly<Record<string, string>>): string[] {
  return Object.entries(files).map(([name, content]) => {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`bundled file name "${name}" must be a plain file name`);
    const encoded = Buffer.from(content, 'utf8').toString('base64');
    return (
      `node -e "require('node:fs').writeFileSync(require('node:path').join(process.argv[1], process.argv[2]), ` +
      `Buffer.from(process.argv[3], 'base64'))" "${outputDir}" "${name}" "${encoded}"`
    );
  });
}

function upstreamsModule(settings: BundleSettings): string {
  return settings.upstreams ? UPSTREAMS_MODULES.gateway : UPSTREAMS_MODULES.none;
}

/** NodejsFunction bundling options for a handler. */
export function lambdaBundling(settings: BundleSettings): BundlingOptions {
  return {
    format: OutputFormat.ESM,
    target: BUNDLE_TARGET,
    minify: true,
    sourceMap: true,
    sourceMapMode: SourceMapMode.DEFAULT,
    sourcesContent: false,
    bundleAwsSDK: settings.bundleAwsSdk,
    externalModules: settings.bundleAwsSdk ? [] : [...SDK_EXTERNALS],
    mainFields: [...MAIN_FIELDS],
    banner: ESM_REQUIRE_BANNER,
    logLevel: LogLevel.WARNING,
    esbuildArgs: {
      '--alias': [
        `${TOOLS_IMPORT}=${settings.toolsModule}`,
        `${UPSTREAMS_IMPORT}=${upstreamsModule(settings)}`,
      ],
    },
    ...(settings.files && Object.keys(settings.files).length > 0
      ? {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (_inputDir: string, outputDir: string) =>
              writeFilesCommands(outputDir, settings.files!),
          },
        }
      : {}),
  };
}

/** The same bundle as {@link lambdaBundling}, as options for esbuild's JavaScript API. */
export function esbuildOptions(entry: string, settings: BundleSettings): BuildOptions {
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLE_TARGET,
    minify: true,
    external: settings.bundleAwsSdk ? [] : [...SDK_EXTERNALS],
    mainFields: [...MAIN_FIELDS],
    banner: { js: ESM_REQUIRE_BANNER },
    alias: { [TOOLS_IMPORT]: settings.toolsModule, [UPSTREAMS_IMPORT]: upstreamsModule(settings) },
    logLevel: 'warning',
  };
}
