import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';

/**
 * The README's quick start and the start banner's example, run as printed against local mode with the
 * tokens it made for its data folder: the two agree key for key (the same curl, header by header), and
 * each runs verbatim (the README's with `npx tool-ledger token` for its token) to a 201 and then its
 * replay. The README names port 3000; the test's local mode has a free port, the one substitution made.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README_API = 'http://127.0.0.1:3000';
const run = promisify(execFile);

/** The README's shell block with the quick start's call (the one with `Idempotency-Key: hello-1`). */
async function readmeQuickStart(): Promise<string[]> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  const block = blocks.find(
    (b) => b.includes('Idempotency-Key: hello-1') && b.includes(`curl -i ${README_API}`),
  );
  if (!block) throw new Error('the README has no quick-start block with Idempotency-Key: hello-1');
  return block.trimEnd().split('\n');
}

/** The banner's "Try it" lines: `export TOKEN=…` and the curl with its continuation lines. */
function bannerExample(lines: string[]): string[] {
  const start = lines.findIndex((l) => l.trimStart().startsWith('export TOKEN='));
  expect(start).toBeGreaterThanOrEqual(0);
  let end = start + 1;
  while (lines[end]?.endsWith('\\')) end += 1;
  return lines.slice(start, end + 1).map((l) => l.replace(/^ {2}/, ''));
}

/** Runs shell lines with bash in the repository (where `npx tool-ledger` is this package's CLI). */
async function bash(script: string[], env: Record<string, string>): Promise<string> {
  const { stdout } = await run('bash', ['--norc', '--noprofile', '-c', script.join('\n')], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  return stdout;
}

const statusOf = (curlOutput: string) => Number(/^HTTP\/[\d.]+ (\d{3})/.exec(curlOutput)?.[1]);

describe('the quick start, as printed', () => {
  let stack: LocalStackProcess;
  let dataDir: string;
  let banner: string[];

  beforeAll(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), 'tool-ledger-quick-start-')), 'data');
    stack = await startLocalStack({ dataDir });
    await vi.waitFor(() => expect(stack.stdoutLines().some((l) => l.startsWith('Data folder:'))).toBe(true));
    banner = bannerExample(stack.stdoutLines());
  });

  afterAll(async () => {
    await stack?.kill();
    if (dataDir) await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  it('the README and the banner send the same call, key for key; only the token line differs', async () => {
    const readme = await readmeQuickStart();
    expect(readme[0]).toBe('export TOKEN=$(npx tool-ledger token)');
    expect(banner[0]).toBe(`export TOKEN=${stack.tokens.agent}`);
    const same = (lines: string[]) => lines.slice(1).map((l) => l.trim());
    expect(same(readme)).toEqual(same(banner).map((l) => l.replace(stack.api, README_API)));
  });

  it('the banner’s lines run verbatim: 201, then the stored replay', async () => {
    const first = await bash(banner, {});
    expect(statusOf(first), first).toBe(201);
    expect(first).toContain('"replayed":false');
    const again = await bash(banner, {});
    expect(statusOf(again)).toBe(201);
    expect(again.toLowerCase()).toContain('idempotent-replayed: true');
  });

  it('the README’s lines run verbatim against the same local mode (its data folder’s token from the CLI)', async () => {
    const readme = (await readmeQuickStart()).map((l) => l.replace(README_API, stack.api));
    // A new key: the banner's call above already used hello-1 with these arguments (a replay either way).
    const out = await bash(readme, { TOOL_LEDGER_DATA_DIR: dataDir });
    expect(statusOf(out), out).toBe(201);
    expect(out.toLowerCase()).toContain('idempotent-replayed: true');
    await expect(stat(path.join(dataDir, 'workspace', 'local', 'hello'))).resolves.toBeDefined();
  });
});
