import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/bundling';
import { cdkJsonContext } from './synth';

/**
 * bin/app.ts run as the CDK CLI runs it (CDK_OUTDIR and CDK_CONTEXT_JSON), with bundling skipped, on a
 * machine whose CDK_DEFAULT_REGION says us-west-2: the region must not end up in the template.
 */

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function synthApp(context: Record<string, string>): Promise<string> {
  const outdir = mkdtempSync(path.join(tmpdir(), 'tool-ledger-app-'));
  dirs.push(outdir);
  await run(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bin', 'app.ts')], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({
        ...cdkJsonContext(),
        'aws:cdk:bundling-stacks': [],
        ...context,
      }),
      CDK_VALIDATION: 'false',
      CDK_DEFAULT_ACCOUNT: '444455556666',
      CDK_DEFAULT_REGION: 'us-west-2',
    },
  });
  return readFileSync(path.join(outdir, 'ToolLedger.template.json'), 'utf8');
}

describe('bin/app.ts', () => {
  it('synthesizes an environment-agnostic template, ignoring CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION', async () => {
    const template = await synthApp({});
    expect(template).not.toContain('us-west-2');
    expect(template).not.toContain('444455556666');
    expect(template).toContain('"Ref": "AWS::Region"');
  }, 240_000);

  it('refuses a region without an account (both are pinned, or neither)', async () => {
    await expect(synthApp({ 'toolLedger:region': 'eu-west-1' })).rejects.toThrow(
      /set both toolLedger:account/,
    );
  }, 240_000);
});
