import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TEAM_TOOLS = path.join(ROOT, 'test', 'fixtures', 'team-tools.ts');
const TSX_CLI = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

async function post(stack: LocalStackProcess, key: string, body: unknown) {
  const response = await fetch(`${stack.api}/v1/operations`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.tokens.agent}`,
      'idempotency-key': key,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Runs local mode to its exit (it must refuse to start) and returns the exit code and stderr. */
function startExpectingRefusal(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX_CLI, 'functions/local/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe("local mode runs a deployment's own tools module (TOOL_LEDGER_TOOLS_MODULE)", () => {
  let dataDir: string;
  let stack: LocalStackProcess;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tl-tools-module-'));
    stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_TOOLS_MODULE: TEAM_TOOLS } });
  });
  afterAll(async () => {
    await stack?.kill();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('lists the team tool instead of the shipped ones', async () => {
    const response = await fetch(`${stack.api}/v1/tools`, {
      headers: { authorization: `Bearer ${stack.tokens.agent}` },
    });
    const { tools } = (await response.json()) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name)).toEqual(['team.note']);
  });

  it('runs the team tool once; the retry is a replay of the stored result', async () => {
    const body = { tool: 'team.note', arguments: { note: 'deployed v2' } };
    const first = await post(stack, 'team-1', body);
    const again = await post(stack, 'team-1', body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ state: 'succeeded', replayed: false, result: { lines: 1 } });
    expect(again.body).toMatchObject({ state: 'succeeded', replayed: true, result: { lines: 1 } });
    const log = await readFile(path.join(dataDir, 'workspace', 'local', 'team-notes.log'), 'utf8').catch(() =>
      readFile(path.join(dataDir, 'workspace', 'team-notes.log'), 'utf8'),
    );
    expect(log.trim().split('\n')).toEqual(['team-1 deployed v2']);
  });

  it("a terminal error thrown from the tool author's entry is a terminal failure, not an unknown outcome", async () => {
    const refused = await post(stack, 'team-2', { tool: 'team.note', arguments: { note: 'refuse' } });
    expect(refused.body).toMatchObject({ state: 'failed_terminal', error: { code: 'refused' } });
  });

  it("the start banner's example calls the team tool, and it runs as printed", async () => {
    // The greeting is written right after the ready line; wait for its last line to arrive.
    await vi.waitFor(() => expect(stack.stdoutLines().some((l) => l.startsWith('Data folder:'))).toBe(true));
    const printed = stack.stdoutLines().find((l) => l.trimStart().startsWith("-d '"));
    expect(printed).toBeDefined();
    const call = JSON.parse((printed as string).trim().slice(4, -1)) as { tool: string; arguments: unknown };
    expect(call.tool).toBe('team.note');
    expect(stack.output()).not.toContain('workspace.write_file');
    const answer = await post(stack, 'banner-1', call);
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ state: 'succeeded', replayed: false });
  });
});

describe('a bad TOOL_LEDGER_TOOLS_MODULE stops local mode at start (exit 2, the path named)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tl-tools-module-bad-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a missing file', async () => {
    const missing = path.join(dataDir, 'nope.ts');
    const { code, stderr } = await startExpectingRefusal({
      TOOL_LEDGER_DATA_DIR: dataDir,
      TOOL_LEDGER_TOOLS_MODULE: missing,
    });
    expect(code).toBe(2);
    expect(stderr).toContain(`TOOL_LEDGER_TOOLS_MODULE: no such file: ${missing}`);
  });

  it('a .ts module in a CommonJS package, which says what to change ("type": "module" or .mts)', async () => {
    // What `npm init` (npm 11) writes, and what Node then makes of tools/index.ts.
    const project = path.join(dataDir, 'cjs-project');
    await mkdir(path.join(project, 'tools'), { recursive: true });
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'team', type: 'commonjs' }));
    const module = path.join(project, 'tools', 'index.ts');
    await writeFile(
      module,
      "import type { ToolFactory } from 'tool-ledger/tool';\nconst tools: ToolFactory = () => [];\nexport default tools;\n",
    );
    const { code, stderr } = await startExpectingRefusal({
      TOOL_LEDGER_DATA_DIR: path.join(dataDir, 'cjs-data'),
      TOOL_LEDGER_TOOLS_MODULE: module,
    });
    expect(code).toBe(2);
    expect(stderr).toContain(`TOOL_LEDGER_TOOLS_MODULE: ${module}: Node loads it as CommonJS`);
    expect(stderr).toContain('set "type": "module" in your package.json, or name the file index.mts');
  });

  it('a module without a default-exported factory', async () => {
    const notFactory = path.join(ROOT, 'functions', 'domain', 'states.ts');
    const { code, stderr } = await startExpectingRefusal({
      TOOL_LEDGER_DATA_DIR: dataDir,
      TOOL_LEDGER_TOOLS_MODULE: notFactory,
    });
    expect(code).toBe(2);
    expect(stderr).toContain('must default-export a tool factory');
  });
});

describe('a tools module whose factory cannot build the tools stops local mode at start (exit 2, the module named)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tl-tools-factory-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Writes an ES module tools file (`.mts`: no package.json decides its format) and starts local mode on it. */
  async function startWith(name: string, source: string) {
    const module = path.join(dir, `${name}.mts`);
    await writeFile(module, source);
    const refusal = await startExpectingRefusal({
      TOOL_LEDGER_DATA_DIR: path.join(dir, `${name}-data`),
      TOOL_LEDGER_TOOLS_MODULE: module,
    });
    return { module, ...refusal };
  }

  it('a factory that throws: its own message is shown, not its stack', async () => {
    const { module, code, stderr } = await startWith(
      'throws',
      "export default () => { throw new Error('TICKETS_URL is not set'); };\n",
    );
    expect(code).toBe(2);
    expect(stderr).toContain(
      `TOOL_LEDGER_TOOLS_MODULE: ${module}: the tool factory threw when local mode built the tools (Error: TICKETS_URL is not set)`,
    );
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr).not.toContain('tool-ledger ready');
  });

  it('a factory that returns something other than a list of tools', async () => {
    const notList = await startWith('object', 'export default () => ({ tools: [] });\n');
    expect(notList.code).toBe(2);
    expect(notList.stderr).toContain(
      `TOOL_LEDGER_TOOLS_MODULE: ${notList.module}: the tool factory must return a list of tools, (env) => Tool[]; it returned an object`,
    );
    const notTool = await startWith(
      'not-a-tool',
      "export default () => [{ name: 'team.half', effect: 'write' }];\n",
    );
    expect(notTool.code).toBe(2);
    expect(notTool.stderr).toContain(
      'item 1 (team.half) is not a tool: no execute function (build it with defineTool)',
    );
  });

  it('a read tool that requires approval (reads run at once, so the approval would never be waited for)', async () => {
    const { module, code, stderr } = await startWith(
      'approved-read',
      [
        "const tool = { name: 'team.export', description: 'exports', effect: 'read', requiresApproval: true,",
        '  schema: { safeParse: (v) => ({ success: true, data: v }) },',
        '  execute: async () => ({}) };',
        'export default () => [tool];',
        '',
      ].join('\n'),
    );
    expect(code).toBe(2);
    expect(stderr).toContain(
      `TOOL_LEDGER_TOOLS_MODULE: ${module}: tool "team.export" is a read tool that requires approval`,
    );
    expect(stderr).not.toContain('tool-ledger ready');
  });
});
