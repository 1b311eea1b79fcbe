import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import { buildSync } from 'esbuild';
import { type AnyTool, reconcileTimeoutOf } from '../functions/domain/tool';
import { type ToolEnvironment, type ToolFactory, toolDeclarationProblem } from '../functions/tools/registry';

/**
 * What synth needs to know about the tools, read from the tools module itself: tools are code, so the
 * only way to check their retention (the contract, §8) and timeouts against the queues before deploying is to
 * load the module once at synth time, as the handlers will.
 */

/** Per-tool settings known at synth time. */
export interface ToolManifest {
  /** Every tool name, in registration order. */
  names: string[];
  /** Tools that set `retention` (seconds in code), as durations. */
  retentions: Record<string, Duration>;
  /** Every tool's `timeoutMs` (default 10 s), as durations. */
  timeouts: Record<string, Duration>;
  /**
   * The deadline of one `reconcile` call (`reconcileTimeoutMs`, else `timeoutMs`) of each tool that
   * has a `reconcile`: what a reconciler pass must fit.
   */
  reconcileTimeouts: Record<string, Duration>;
  /** Tools declared in a way no deployment serves (a read tool that requires approval), one sentence each. */
  refused: string[];
}

/** The default `timeoutMs` of a tool (the contract, §4). */
const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

/**
 * Load a tools module and describe its tools. The factory receives the environment the Lambdas will
 * see, minus anything only known at runtime.
 *
 * @example
 * ```ts
 * const manifest = await readToolManifest('/abs/functions/tools/builtin.ts', {
 *   workspaceRoot: '/tmp/tool-ledger', webhookAllow: [], local: false,
 * });
 * new ToolLedger(stack, 'Ledger', { toolRetentions: manifest.retentions, toolTimeouts: manifest.timeouts });
 * ```
 */
export async function readToolManifest(modulePath: string, env: ToolEnvironment): Promise<ToolManifest> {
  const loaded: { default?: unknown } = await import(pathToFileURL(modulePath).href);
  return describeTools(factoryOf(modulePath, loaded)(env));
}

const loadedSync = new Map<string, ToolManifest>();

/**
 * {@link readToolManifest} for code that cannot wait: the construct's constructor, so that
 * `new ToolLedger(this, 'L', { toolsModule })` checks the tools' retention and timeouts (the contract, §8)
 * without the app loading anything first. The module is bundled with esbuild (which the handlers' bundling
 * uses anyway), as the handlers' bundles are, into a CommonJS file that Node can require
 * synchronously; the result is kept per module and environment for the life of the process.
 *
 * @example
 * ```ts
 * const manifest = readToolManifestSync('/abs/tools/acme-tools.ts', { workspaceRoot: '/tmp/workspace', webhookAllow: [], local: false });
 * ```
 */
export function readToolManifestSync(modulePath: string, env: ToolEnvironment): ToolManifest {
  const key = JSON.stringify([modulePath, env]);
  const cached = loadedSync.get(key);
  if (cached) return cached;
  const built = buildSync({
    entryPoints: [modulePath],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // Runs in the synthesizing process: the oldest Node the package supports (package.json `engines`).
    target: 'node22',
    write: false,
    logLevel: 'silent',
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'tool-ledger-manifest-'));
  let loaded: { default?: unknown };
  try {
    const file = path.join(dir, 'tools.cjs');
    writeFileSync(file, built.outputFiles[0]?.text ?? '');
    loaded = createRequire(import.meta.url)(file) as { default?: unknown };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const manifest = describeTools(factoryOf(modulePath, loaded)(env));
  loadedSync.set(key, manifest);
  return manifest;
}

function factoryOf(modulePath: string, loaded: { default?: unknown }): ToolFactory {
  if (typeof loaded.default !== 'function') {
    throw new Error(
      `${modulePath} must default-export a ToolFactory, (env: ToolEnvironment) => Tool[]: ` +
        'add `export default myTools;` (the handlers import it as the default export of #tool-ledger/tools).',
    );
  }
  return loaded.default as ToolFactory;
}

function describeTools(tools: readonly AnyTool[]): ToolManifest {
  const manifest: ToolManifest = {
    names: [],
    retentions: {},
    timeouts: {},
    reconcileTimeouts: {},
    refused: [],
  };
  for (const tool of tools) {
    manifest.names.push(tool.name);
    const problem = toolDeclarationProblem(tool);
    if (problem !== undefined) manifest.refused.push(problem);
    // A read tool's `retention` is the lifetime of its result cache, and reads are never queued, so
    // The retention check of the contract's §8 (a message must not outlive its record) does not apply to it.
    if (tool.retention !== undefined && tool.effect !== 'read') {
      manifest.retentions[tool.name] = Duration.seconds(tool.retention);
    }
    manifest.timeouts[tool.name] = Duration.millis(tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS);
    if (tool.reconcile !== undefined && tool.effect !== 'read') {
      manifest.reconcileTimeouts[tool.name] = Duration.millis(reconcileTimeoutOf(tool));
    }
  }
  return manifest;
}
