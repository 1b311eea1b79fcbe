import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { embedProblems, markdownWithTypeScript } from '../../scripts/docs/embed';
import { documentationFiles } from '../../scripts/docs/links';
import { type ShellBlock, shellBlocks } from '../../scripts/docs/shell-blocks';
import { READY_LINE } from '../../scripts/local-stack';

/**
 * The docs cannot drift from the product: the README's five-minute tour runs as written against local
 * mode started the way the tour starts it (`npm start`), each block's output checked against what the
 * text around it says; the start banner's first call is the tour's first call, key for key; every shell
 * block of the docs is either run here, run by pack-check, or one that needs what this machine lacks
 * (```bash); and every TypeScript block is a copy of a file under examples/ that `npm run typecheck`
 * compiles. The blocks run one after the other in one bash session, as in the reader's second terminal.
 * The one liberty taken: local mode listens on a free port, not 3000 (another process may hold it), and
 * keeps its data in a folder of the test's, so `http://127.0.0.1:3000` in a block is replaced by its
 * address, and the session has `TOOL_LEDGER_ENDPOINT` and `TOOL_LEDGER_DATA_DIR` set for the CLI.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const blocks = shellBlocks('README.md', README);
const tour = blocks.filter((b) => b.kind === 'run');

let local: ChildProcess | undefined;
let api = '';
let banner = '';
const work = mkdtempSync(path.join(tmpdir(), 'tool-ledger-tour-'));
const dataDir = path.join(work, '.data');

/**
 * `npm start`, exactly as the tour says, in its own process group; resolves with the API's address once
 * the banner is printed whole (its last line says how to stop).
 */
function npmStart(): Promise<{ child: ChildProcess; api: string; output: () => string }> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', [SETTINGS.dataDir.name]: dataDir, [SETTINGS.logFormat.name]: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const output = () => out;
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const match = out
        .split('\n')
        .map((l) => READY_LINE.exec(l))
        .find((m) => m !== null);
      if (match && out.includes('Ctrl-C stops.')) resolve({ child, api: match[1] as string, output });
    });
    child.once('exit', (code) =>
      reject(new Error(`npm start exited (${code}) before it was ready:\n${out}`)),
    );
  });
}

/**
 * The reader's second terminal: one bash session for the whole tour, so that what a block exports
 * (`export TOKEN=…`) is there for the next, as it is for a reader. Each block is sourced from a file with
 * its input closed (nothing it starts can read the session's next commands), and every failing command
 * is remembered (an ERR trap), as a reader would see it fail.
 */
class Terminal {
  private readonly shell = spawn('bash', ['--noprofile', '--norc'], {
    cwd: ROOT,
    env: { ...process.env, TOOL_LEDGER_ENDPOINT: api, [SETTINGS.dataDir.name]: dataDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  private out = '';
  private blocks = 0;

  constructor() {
    this.shell.stdout.on('data', (c: Buffer) => {
      this.out += c.toString('utf8');
    });
    this.shell.stdin.write("exec 2>&1\ntrap '__rc=$?' ERR\n");
  }

  /** Runs a block as written (its local-mode address made the test's) and returns what it printed. */
  run(block: ShellBlock): Promise<{ code: number; out: string }> {
    this.blocks += 1;
    const file = path.join(work, `block-${this.blocks}.sh`);
    writeFileSync(file, `${block.script.replaceAll('http://127.0.0.1:3000', api)}\n`);
    const sentinel = `__doc_test_${this.blocks}__`;
    const start = this.out.length;
    this.shell.stdin.write(`__rc=0; source '${file}' </dev/null; printf '\\n${sentinel} %s\\n' "$__rc"\n`);
    return new Promise((resolve) => {
      const check = () => {
        const at = this.out.indexOf(`${sentinel} `, start);
        const end = at < 0 ? -1 : this.out.indexOf('\n', at);
        if (end < 0) return;
        this.shell.stdout.off('data', check);
        const code = Number(this.out.slice(at + sentinel.length + 1, end));
        resolve({ code, out: this.out.slice(start, at) });
      };
      this.shell.stdout.on('data', check);
      check();
    });
  }

  close(): void {
    this.shell.kill('SIGKILL');
  }
}

let terminal: Terminal | undefined;

/** The curl call of a block or of the banner: its operation ID and its body, whatever the quoting. */
function curlCall(text: string): { key: string; body: unknown } {
  const key = /Idempotency-Key: ([^'"\s]+)/.exec(text)?.[1];
  const body = /-d '([^']+)'/.exec(text)?.[1];
  if (key === undefined || body === undefined)
    throw new Error(`no curl call with a key and a body in:\n${text}`);
  return { key, body: JSON.parse(body) };
}

beforeAll(async () => {
  const started = await npmStart();
  local = started.child;
  api = started.api;
  banner = started.output();
  terminal = new Terminal();
});

afterAll(() => {
  terminal?.close();
  if (local?.pid !== undefined) {
    try {
      process.kill(-local.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const typescript = embedProblems(ROOT, markdownWithTypeScript(ROOT)).blocks;
  process.stdout.write(
    `doc tests: ${tour.length} shell blocks of the README's tour run against local mode, ${typescript} ` +
      `TypeScript blocks embedded from examples/ and type-checked (${tour.length + typescript} in all)\n`,
  );
});

describe("the README's five-minute tour, run as written", () => {
  it('starts local mode with the commands of its first block, and the banner proposes its first call', () => {
    const start = blocks.find((b) => b.kind === 'start');
    expect(start?.script.split('\n')).toEqual(['npm ci', 'npm start']);
    const first = tour[0];
    expect(first).toBeDefined();
    // Key for key: the call the banner prints is the tour's first call.
    expect(curlCall(banner)).toEqual(curlCall(first?.script ?? ''));
    expect(banner).toContain('Authorization: Bearer $TOKEN');
  });

  it.each(tour.map((block, i) => [i + 1, block.line, block] as const))(
    'step %i (README.md line %i) does what the tour says',
    async (_step, _line, block) => {
      const { code, out } = await (terminal as Terminal).run(block);
      expect(code, out).toBe(0);
      for (const pattern of block.expect) expect(out).toMatch(pattern);
      for (const file of block.files) {
        expect(existsSync(path.join(work, file)), `${file} after:\n${out}`).toBe(true);
      }
    },
  );
});

describe('every code block of the docs is tested', () => {
  it('each shell block is run by this test, by pack-check, or by CI itself; what needs more is ```bash', () => {
    const unmarked: string[] = [];
    const packCheck: string[] = [];
    for (const file of documentationFiles(ROOT)) {
      for (const block of shellBlocks(file, readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (block.kind === undefined) unmarked.push(`${file}:${block.line}`);
        if (block.kind === 'pack-check') packCheck.push(file);
        // Only the README's tour runs against the local mode this test starts.
        if ((block.kind === 'run' || block.kind === 'start') && file !== 'README.md') {
          unmarked.push(`${file}:${block.line} (${block.kind} outside the README)`);
        }
      }
    }
    expect(unmarked).toEqual([]);
    // pack-check runs the install path and the tools page's local run (scripts/pack-check/main.ts).
    expect([...new Set(packCheck)].sort()).toEqual(['README.md', 'docs/install.md', 'docs/tools.md']);
  });

  it('the CI block names what .ci/run runs, and the start that the tour runs', () => {
    const ci = readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8');
    const commands = blocks
      .filter((b) => b.kind === 'ci')
      .flatMap((b) => b.script.split('\n'))
      .flatMap((line) => (line.split('#')[0] as string).split('&&'))
      .map((c) => c.trim())
      .filter((c) => c !== '');
    expect(commands).toEqual(['npm ci', 'npm start', 'npm ci', 'npm test']);
    for (const command of commands.filter((c) => c !== 'npm start')) {
      expect(ci).toMatch(new RegExp(`^${command}$`, 'm'));
    }
  });

  it('each TypeScript block is a file of examples/, as it stands there', () => {
    const { problems, blocks: count } = embedProblems(ROOT, markdownWithTypeScript(ROOT));
    expect(problems).toEqual([]);
    expect(count).toBeGreaterThan(0);
    // The examples are what the type-checker sees (npm run typecheck compiles examples/tsconfig.json).
    const examples = readdirSync(path.join(ROOT, 'examples'), { recursive: true, encoding: 'utf8' });
    expect(examples.filter((f) => f.endsWith('.ts')).length).toBeGreaterThan(0);
  });
});
