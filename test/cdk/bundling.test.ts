import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { esbuildOptions, lambdaBundling, TOOLS_IMPORT } from '../../lib/bundling';
import { HandlerFunction } from '../../lib/handler-function';
import { cdkJsonContext } from './synth';

/**
 * Bundles a handler-shaped entry for real, through NodejsFunction and local esbuild, to prove that the
 * tools module is swapped in by the alias and that scripts/size.ts measures the same bundle.
 */

const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const ENTRY = path.join(FIXTURES, 'alias-entry.mjs');
const TOOLS = path.join(FIXTURES, 'short-retention-tools.ts');
const MARKER = 'marker 7f3c9a';
/** Shell-hostile on purpose: quotes, `$`, backticks, a newline, non-ASCII. */
const BUNDLED_JSON = JSON.stringify({
  acme: { agents: ['arn:aws:iam::1:role/it\'s-"$HOME"-`x`'] },
  note: 'é\n',
});

let outdir: string;
let assetDir: string;

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
    bundling: lambdaBundling({
      toolsModule: TOOLS,
      bundleAwsSdk: false,
      files: { 'tool-ledger-tenants.json': BUNDLED_JSON },
    }),
    logRetention: RetentionDays.ONE_DAY,
    removalPolicy: RemovalPolicy.DESTROY,
    tracing: false,
  });
  const assembly = app.synth();
  const artifact = assembly.getStackByName('Bundled');
  const template = artifact.template as {
    Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
  };
  const fn = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function')!;
  // The staged asset folder is named after the asset hash, which is also the S3 key.
  assetDir = path.join(assembly.directory, `asset.${fn.Properties.Code!.S3Key!.replace(/\.zip$/, '')}`);
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

  it('loads in plain Node and exposes the configured tools to the handler', () => {
    const url = pathToFileURL(path.join(assetDir, 'index.mjs')).href;
    const script = `const m = await import(${JSON.stringify(url)}); console.log(JSON.stringify(await m.handler()));`;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual(['acme.audit_note', 'acme.lookup']);
  });

  it('writes configuration files next to the bundle byte for byte (the tenant map, outside the environment)', () => {
    expect(readFileSync(path.join(assetDir, 'tool-ledger-tenants.json'), 'utf8')).toBe(BUNDLED_JSON);
  });

  it('is the same bundle scripts/size.ts measures', async () => {
    const cdkCode = readFileSync(path.join(assetDir, 'index.mjs'), 'utf8').replace(
      /\n\/\/# sourceMappingURL=.*\n?$/,
      '\n',
    );
    const result = await build({
      ...esbuildOptions(ENTRY, { toolsModule: TOOLS, bundleAwsSdk: false }),
      write: false,
    });
    const sizeCode = result.outputFiles[0]!.text;
    expect(Math.abs(sizeCode.length - cdkCode.length)).toBeLessThan(64);
    expect(sizeCode).toContain(MARKER);
  });
});
