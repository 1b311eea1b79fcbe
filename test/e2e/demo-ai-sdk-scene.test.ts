import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AiSdkSceneResult, aiSdkDemoScene, aiSdkProblems } from '../../scripts/demo/ai-sdk-scene';

/**
 * The demo's AI SDK scene (`npm run demo`), played as the demo plays it: local mode as a child process,
 * an AI SDK agent (generateText, the SDK's mock model) as real processes, the first `kill -9`ed after its
 * email went out and before the ledger heard of it, the second running the same step of the same
 * conversation. The scene's own checks are the ones that fail the demo.
 */

let root: string;
const lines: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tool-ledger-demo-ai-sdk-'));
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the demo scene: an AI SDK agent killed between its email and the ledger hearing of it', () => {
  it('sends one email across the crash; the re-run step is reconciled and the model told it was a replay', async () => {
    const report = await aiSdkDemoScene.run({ root, say: (run, line) => lines.push(`[${run}] ${line}`) });
    expect(report.problems, lines.join('\n')).toEqual([]);
    expect(report.table).toMatch(/emails sent: +1\n/);
    expect(report.table).toMatch(/SIGKILL/);
    expect(report.summary).toMatch(/1 email across the crash/);
  });

  it('fails the demo on a second email, a process not killed, or a model not told of the replay', () => {
    const held = {
      emails: 1,
      crashed: 'SIGKILL',
      operation: { state: 'succeeded' },
      told: { replayed: true },
    } as AiSdkSceneResult;
    expect(aiSdkProblems(held)).toEqual([]);
    expect(aiSdkProblems({ ...held, emails: 2 })).toEqual(['2 emails']);
    expect(aiSdkProblems({ ...held, crashed: null })).toHaveLength(1);
    expect(aiSdkProblems({ ...held, told: { replayed: false } })).toEqual([
      'the model was not told of the replay',
    ]);
  });
});
