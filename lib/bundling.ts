import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import { type BuildOptions, buildSync } from 'esbuild';
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
  events: path.join(PROJECT_ROOT, 'functions', 'handlers', 'events.ts'),
} as const;

/** esbuild target; matches the Lambda runtime (Node.js 24, lib/handler-function.ts). */
export const BUNDLE_TARGET = 'node24';

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

function upstreamsModule(settings: BundleSettings): string {
  return settings.upstreams ? UPSTREAMS_MODULES.gateway : UPSTREAMS_MODULES.none;
}

/** The file a handler bundle starts from: the Lambda handler setting is `index.handler`. */
export const BUNDLE_ENTRY_FILE = 'index.mjs';

/**
 * A handler's bundle, as options for esbuild's JavaScript API: one ESM entry (`index.mjs`) in `outdir`,
 * and the code that only some paths reach through a dynamic `import()` in chunks of its own
 * (`chunks/`). A chunk is read and compiled when its path first runs, not at cold start: the read
 * cache (Powertools idempotency and JMESPath), read tools and the SQS client stay out of the import a
 * handler pays for on every cold start. Code that the entry and a chunk share goes into a chunk the
 * entry imports statically.
 *
 * @example
 * ```ts
 * await build({ ...esbuildOptions(HANDLER_ENTRIES.executor, { toolsModule: DEFAULT_TOOLS_MODULE, bundleAwsSdk: false }, 'dist/executor') });
 * // dist/executor/index.mjs, dist/executor/chunks/chunk-….mjs
 * ```
 */
export function esbuildOptions(entry: string, settings: BundleSettings, outdir: string): BuildOptions {
  return {
    entryPoints: { index: entry },
    bundle: true,
    splitting: true,
    outdir,
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
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

/**
 * Builds a handler's bundle into `outdir` as the Lambda function ships it: {@link esbuildOptions} with
 * a source map beside each file (no sources inside: the map only names lines), then `files` written
 * next to the entry.
 */
export function bundleHandler(entry: string, settings: BundleSettings, outdir: string): void {
  buildSync({ ...esbuildOptions(entry, settings, outdir), sourcemap: true, sourcesContent: false });
  for (const [name, content] of Object.entries(settings.files ?? {})) {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`bundled file name "${name}" must be a plain file name`);
    writeFileSync(path.join(outdir, name), content, 'utf8');
  }
}

/**
 * A handler's Lambda code: {@link bundleHandler} run by the CDK at synth (local bundling: esbuild is a
 * dependency of this package, so no Docker is needed), the asset named after the bundle's own bytes.
 * NodejsFunction is not used because it writes one file per handler (esbuild's `--outfile`), which
 * rules out chunks.
 */
export function handlerCode(entry: string, settings: BundleSettings): Code {
  // The source folder is only where the asset is said to come from: local bundling reads the entry
  // and its imports, and nothing is copied from the folder.
  return Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling always succeeds or throws. The command names what is bundled, so
      // that the CDK's asset cache tells the handlers apart.
      image: DockerImage.fromRegistry('public.ecr.aws/sam/build-nodejs24.x'),
      command: ['tool-ledger-bundle', path.relative(PROJECT_ROOT, entry), settingsDigest(settings)],
      local: {
        tryBundle(outputDir: string): boolean {
          bundleHandler(entry, settings, outputDir);
          return true;
        },
      },
    },
  });
}

/** A digest of the settings (the files may be large): part of the asset cache's key, never shipped. */
function settingsDigest(settings: BundleSettings): string {
  return createHash('sha256').update(JSON.stringify(settings)).digest('hex');
}
