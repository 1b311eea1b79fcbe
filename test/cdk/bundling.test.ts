import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esbuildOptions, TOOLS_IMPORT } from '../../lib/bundling';
import { HandlerFunction } from '../../lib/handler-function';
import { cdkJsonContext } from './synth';

/**
 * Bundles a handler-shaped entry for real, through the construct's local esbuild bundling at synth, to
 * prove that the tools module is swapped in by the alias, that code behind a dynamic import ships as a
 * chunk beside the entry, and that scripts/size.ts measures the same bundle.
 */

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const ENTRY = path.join(FIXTURES, 'alias-entry.mjs');
const TOOLS = path.join(FIXTURES, 'short-retention-tools.ts');
const MARKER = 'marker 7f3c9a';
/** In a module the fixture entry imports dynamically. */
const LAZY_MARKER = 'lazy marker 2b81e4';
/** Shell-hostile on purpose: quotes, `$`, backticks, a newline, non-ASCII. */
const BUNDLED_JSON = JSON.stringify({
  acme: { agents: ['arn:aws:iam::1:role/it\'s-"$HOME"-`x`'] },
  note: 'é\n',
});

let outdir: string;
let assetDir: string;
let handlerSetting: string | undefined;

beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'tool-ledger-cdk-'));
  const app = new App({
    outdir,
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': ['Bundled'] },
    builtinCloudFormationValidation: false,
  });
  const stack = new Stack(app, 'Bundled');
  new HandlerFunction(stack, 'Fixture', {
    entry: ENTRY,
    description: 'fixture',
    timeout: Duration.seconds(10),
    memorySize: 128,
    environment: {},
    bundling: {
      toolsModule: TOOLS,
      bundleAwsSdk: false,
      files: { 'tool-ledger-tenants.json': BUNDLED_JSON },
    },
    logRetention: RetentionDays.ONE_DAY,
    removalPolicy: RemovalPolicy.DESTROY,
    tracing: false,
  });
  const assembly = app.synth();
  const artifact = assembly.getStackByName('Bundled');
  const template = artifact.template as {
    Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string }; Handler?: string } }>;
  };
  const fn = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function')!;
  // The staged asset folder is named after the asset hash, which is also the S3 key.
  assetDir = path.join(assembly.directory, `asset.${fn.Properties.Code!.S3Key!.replace(/\.zip$/, '')}`);
  handlerSetting = fn.Properties.Handler;
}, 240_000);

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});

describe('handler bundling', () => {
  it(`replaces the ${TOOLS_IMPORT} import with the configured tools module`, () => {
    const code = readFileSync(path.join(assetDir, 'index.mjs'), 'utf8');
    expect(code).toContain(MARKER);
    expect(code).not.toContain(TOOLS_IMPORT);
  });

  it('ships an ESM bundle with a require shim, a source map, and the AWS SDK left to the runtime', () => {
    const code = readFileSync(path.join(assetDir, 'index.mjs'), 'utf8');
    expect(code.startsWith("import{createRequire as __toolLedgerRequire}from'node:module';")).toBe(true);
    expect(existsSync(path.join(assetDir, 'index.mjs.map'))).toBe(true);
    expect(code).not.toMatch(/@aws-sdk\/client-dynamodb\/dist/);
  });

  it('loads in plain Node, exposes the configured tools to the handler, and loads its chunk on demand', () => {
    const url = pathToFileURL(path.join(assetDir, 'index.mjs')).href;
    const script = `const m = await import(${JSON.stringify(url)}); console.log(JSON.stringify([await m.handler(), await m.lazy()]));`;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual([['acme.audit_note', 'acme.lookup'], LAZY_MARKER]);
  });

  it('writes configuration files next to the bundle byte for byte (the tenant map, outside the environment)', () => {
    expect(readFileSync(path.join(assetDir, 'tool-ledger-tenants.json'), 'utf8')).toBe(BUNDLED_JSON);
  });

  it('ships code behind a dynamic import as a chunk beside the entry, with its own source map', () => {
    expect(handlerSetting).toBe('index.handler');
    const chunks = readdirSync(path.join(assetDir, 'chunks'));
    const lazy = chunks.filter((name) => name.endsWith('.mjs'));
    expect(lazy.length).toBeGreaterThan(0);
    expect(chunks).toEqual(expect.arrayContaining(lazy.map((name) => `${name}.map`)));
    const lazyCode = lazy.map((name) => readFileSync(path.join(assetDir, 'chunks', name), 'utf8')).join('');
    expect(lazyCode).toContain(LAZY_MARKER);
    expect(readFileSync(path.join(assetDir, 'index.mjs'), 'utf8')).not.toContain(LAZY_MARKER);
  });

  it('is the same bundle scripts/size.ts measures', async () => {
    const withoutMap = (code: string) => code.replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n');
    const result = await build({
      ...esbuildOptions(ENTRY, { toolsModule: TOOLS, bundleAwsSdk: false }, assetDir),
      write: false,
    });
    // Chunk names carry a hash of their content, which the shipped source-map comment changes: files
    // are compared by role (the entry, then the chunks by size).
    const built = result.outputFiles.filter((file) => file.path.endsWith('.mjs'));
    const entry = built.find((file) => path.basename(file.path) === 'index.mjs')!;
    const chunkDir = path.join(assetDir, 'chunks');
    const shippedChunks = readdirSync(chunkDir)
      .filter((name) => name.endsWith('.mjs'))
      .map((name) => withoutMap(readFileSync(path.join(chunkDir, name), 'utf8')).length)
      .sort((a, b) => a - b);
    const builtChunks = built
      .filter((file) => file !== entry)
      .map((file) => file.text.length)
      .sort((a, b) => a - b);
    expect(builtChunks.length).toBe(shippedChunks.length);
    for (const [i, length] of builtChunks.entries()) {
      expect(Math.abs(length - shippedChunks[i]!)).toBeLessThan(64);
    }
    const shippedEntry = withoutMap(readFileSync(path.join(assetDir, 'index.mjs'), 'utf8'));
    expect(Math.abs(entry.text.length - shippedEntry.length)).toBeLessThan(64);
    expect(entry.text).toContain(MARKER);
  });
});
