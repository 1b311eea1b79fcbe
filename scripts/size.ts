/**
 * Bundle size report (`npm run size`): bundles each handler exactly as the CDK construct does
 * (lib/bundling.ts: ESM, minified, target node24, `@aws-sdk/*` left to the Lambda runtime, the tools
 * module swapped in by alias, code behind dynamic imports in chunks) and prints, for each, the minified
 * and gzipped size of what a cold start loads (the entry and the chunks it imports statically) and the
 * minified size of the chunks loaded on demand.
 *
 * Options: `--json` prints one JSON document instead of the table; `--tools <path>` measures with
 * another tools module; `--bundle-sdk` measures with the AWS SDK bundled; `--upstreams` measures a
 * deployment that names MCP upstreams (the gateway bundled).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import {
  BUNDLE_TARGET,
  DEFAULT_TOOLS_MODULE,
  esbuildOptions,
  HANDLER_ENTRIES,
  PROJECT_ROOT,
} from '../lib/bundling';
import { bundleOutputs, totalBytes } from './bundle-outputs';

/** One handler's measurement; sizes are absent when the entry is missing or fails to bundle. */
interface HandlerSize {
  handler: string;
  entry: string;
  status: 'ok' | 'missing' | 'failed';
  /** What a cold start loads: the entry and the chunks it imports statically. */
  minifiedBytes?: number;
  gzipBytes?: number;
  /** Chunks loaded on demand, by a dynamic import. */
  lazyBytes?: number;
  /** The three largest inputs of what a cold start loads, by bytes in the output. */
  largest?: { input: string; bytes: number }[];
  error?: string;
}

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    tools: { type: 'string' },
    'bundle-sdk': { type: 'boolean', default: false },
    upstreams: { type: 'boolean', default: false },
  },
});

const settings = {
  toolsModule: values.tools ? path.resolve(values.tools) : DEFAULT_TOOLS_MODULE,
  bundleAwsSdk: values['bundle-sdk'] ?? false,
  upstreams: values.upstreams ?? false,
};

async function measure(handler: string, entry: string): Promise<HandlerSize> {
  const relative = path.relative(PROJECT_ROOT, entry);
  if (!existsSync(entry)) return { handler, entry: relative, status: 'missing' };
  try {
    const result = await build({
      ...esbuildOptions(entry, settings, path.join(PROJECT_ROOT, 'dist-size', handler)),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = bundleOutputs(result.metafile);
    const contents = new Map(
      result.outputFiles.map((file) => [path.relative(process.cwd(), file.path), file.contents]),
    );
    const atStart = Buffer.concat(outputs.atStart.map((file) => contents.get(file) ?? new Uint8Array()));
    const byPackage = new Map<string, number>();
    for (const file of outputs.atStart) {
      for (const [input, { bytesInOutput }] of Object.entries(result.metafile.outputs[file]?.inputs ?? {})) {
        const key = packageOf(input);
        byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
      }
    }
    const largest = [...byPackage.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([input, bytes]) => ({ input, bytes }));
    return {
      handler,
      entry: relative,
      status: 'ok',
      minifiedBytes: atStart.byteLength,
      gzipBytes: gzipSync(atStart).byteLength,
      lazyBytes: totalBytes(outputs, outputs.lazy),
      largest,
    };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return { handler, entry: relative, status: 'failed', error: message };
  }
}

/** `node_modules/@scope/name/...` → `@scope/name`; project files → `(project)`. */
function packageOf(input: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return match?.[1] ?? '(project)';
}

const kib = (bytes: number | undefined) => (bytes === undefined ? '-' : (bytes / 1024).toFixed(1));

const sizes = await Promise.all(Object.entries(HANDLER_ENTRIES).map(([name, entry]) => measure(name, entry)));

if (values.json) {
  console.log(
    JSON.stringify(
      { settings: { ...settings, toolsModule: path.relative(PROJECT_ROOT, settings.toolsModule) }, sizes },
      null,
      2,
    ),
  );
} else {
  const sdk = settings.bundleAwsSdk
    ? 'AWS SDK bundled'
    : '@aws-sdk/* external (provided by the Lambda runtime)';
  console.log(`Handler bundles: ESM, minified, ${BUNDLE_TARGET}, ${sdk}`);
  console.log(`Tools module: ${path.relative(PROJECT_ROOT, settings.toolsModule)}`);
  console.log(`MCP gateway: ${settings.upstreams ? 'bundled (--upstreams)' : 'left out (no upstreams)'}\n`);
  const rows = sizes.map((size) => [
    size.handler,
    kib(size.minifiedBytes),
    kib(size.gzipBytes),
    kib(size.lazyBytes),
    size.status === 'ok'
      ? (size.largest ?? []).map((l) => `${l.input} ${kib(l.bytes)}`).join(', ')
      : size.status === 'missing'
        ? `missing: ${size.entry} does not exist yet`
        : `failed: ${size.error}`,
  ]);
  const header = [
    'handler',
    'at start min KiB',
    'gzip KiB',
    'on demand min KiB',
    'largest inputs at start (KiB)',
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i >= 1 && i <= 3 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

// Missing handlers are reported, not fatal (they may not be written yet); a bundle that fails is.
process.exitCode = sizes.some((size) => size.status === 'failed') ? 1 : 0;
