import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CliIo } from '../../cli/io';
import { main } from '../../cli/main';

/**
 * The command line itself: usage errors (exit 2, nothing sent), global options and their environment
 * variables, SigV4 signing, and the real `npx tool-ledger` bin. None of these needs a ledger; requests
 * that must not happen are caught by a `connect` that counts.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs the CLI with no terminal and an empty environment; `connect` must not be reached. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  let connected = 0;
  const io: CliIo = {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env,
    connect: () => {
      connected += 1;
      throw new Error('no request expected');
    },
  };
  const code = await main(argv, io);
  return { code, stdout, stderr, connected };
}

describe('usage errors exit 2 and send nothing', () => {
  it.each([
    [[], 'Usage: tool-ledger <command>'],
    [['bogus'], "unknown command 'bogus'"],
    [['lst'], "unknown command 'lst' (did you mean 'list'?)"],
    [['reslove', 'op-1'], "unknown command 'reslove' (did you mean 'resolve'?)"],
    [['recon'], "unknown command 'recon' (did you mean 'reconcile'?)"],
    [['list', '--limt', '5'], "Unknown option '--limt'"],
    [['list', 'extra'], 'usage: tool-ledger list'],
    [['show'], 'usage: tool-ledger show <id>'],
    [['show', 'a', 'b'], 'usage: tool-ledger show <id>'],
    [['show', 'bad id'], 'operation ID'],
    [['list', '--limit', '0'], '--limit must be an integer of at least 1'],
    [['list', '--limit', '101'], '--limit must be at most 100'],
    [['list', '--state', 'finished'], '--state must be unresolved, all, or states separated by commas'],
    [['list', '--since', 'last week'], '--since must be a time with a zone'],
    [['list', '--endpoint', 'ftp://x'], '--endpoint must be an http:// or https:// URL'],
    [['list', '--endpoint', 'http://user:pw@host'], 'must not carry credentials'],
    [['list', '--token', 't', '--sigv4', '--region', 'eu-west-1'], '--token and --sigv4 exclude each other'],
    [['list', '--sigv4'], '--sigv4 needs a region'],
    [['list', '--region', 'eu-west-1'], '--region only applies with --sigv4'],
    [['list', '--state'], "Option '--state <value>' argument missing"],
  ])('%j', async (argv, message) => {
    const result = await run(argv as string[]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
    expect(result.connected).toBe(0);
  });

  it('with --json, a usage error is a JSON document on stderr', async () => {
    const result = await run(['list', '--json', '--limit', 'x']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toEqual({
      error: { code: 'usage', message: '--limit must be an integer of at least 1' },
    });
  });
});

describe('help', () => {
  it('--help, -h and `help` print the commands on stdout and exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const result = await run(argv);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      for (const name of ['list', 'show', 'resolve', 'approve', 'reject', 'reconcile', 'tools']) {
        expect(result.stdout).toMatch(new RegExp(`^  ${name}\\s`, 'm'));
      }
      expect(result.stdout).toContain('--endpoint URL');
    }
  });

  it('`<command> --help` and `help <command>` print the command’s usage and options', async () => {
    for (const argv of [
      ['resolve', '--help'],
      ['help', 'resolve'],
    ]) {
      const result = await run(argv);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Usage: tool-ledger resolve <id> applied|not_applied|failed');
      expect(result.stdout).toContain('--attempt N');
    }
  });
});

describe('signing', () => {
  let server: Server | undefined;
  afterEach(async () => {
    vi.unstubAllEnvs();
    const open = server;
    server = undefined;
    if (open) await new Promise((resolve) => open.close(resolve));
  });

  /** A server that records what it received and answers an empty tool list. */
  async function recorder(): Promise<{
    endpoint: string;
    seen: { path: string; headers: IncomingHttpHeaders }[];
  }> {
    const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
    server = createServer((req, res) => {
      seen.push({ path: req.url ?? '', headers: req.headers });
      res.setHeader('content-type', 'application/json');
      res.end('{"tools":[]}');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }

  async function runReal(argv: string[], env: NodeJS.ProcessEnv) {
    let stdout = '';
    let stderr = '';
    const code = await main(argv, {
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      env,
    });
    return { code, stdout, stderr };
  }

  it('--sigv4 signs for execute-api in the region, over the stage path, with credentials from the chain', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret-example');
    vi.stubEnv('AWS_SESSION_TOKEN', '');
    const { endpoint, seen } = await recorder();
    const result = await runReal(
      ['tools', '--sigv4', '--region', 'eu-west-1', '--endpoint', `${endpoint}/prod`],
      {},
    );
    expect(result).toMatchObject({ code: 0, stdout: 'no tools\n' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/prod/v1/tools');
    expect(seen[0]!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(seen[0]!.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
  });

  it('--token sends a bearer token; TOOL_LEDGER_TOKEN does the same without the command line', async () => {
    const { endpoint, seen } = await recorder();
    expect((await runReal(['tools', '--endpoint', endpoint, '--token', 'abc'], {})).code).toBe(0);
    expect(
      (await runReal(['tools'], { TOOL_LEDGER_ENDPOINT: endpoint, TOOL_LEDGER_TOKEN: 'def' })).code,
    ).toBe(0);
    expect(seen.map((s) => s.headers.authorization)).toEqual(['Bearer abc', 'Bearer def']);
  });

  it('an API that cannot be reached is exit 1, naming the endpoint', { timeout: 120_000 }, async () => {
    const { endpoint } = await recorder();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    const result = await runReal(['reconcile', '--endpoint', endpoint, '--token', 'abc'], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`unreachable: no answer from ${endpoint} (ECONNREFUSED)`);
  });
});

describe('the bin', () => {
  /**
   * `npx tool-ledger` resolves the bin from the project's own package.json. Until package.json declares
   * it, the same launcher is run from a scratch project that declares it and shares node_modules.
   * `--no` and `--offline` make sure npx can never fetch a package of that name from the registry.
   */
  it('`npx tool-ledger --help` works as a real process', { timeout: 120_000 }, async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const declared =
      (pkg.bin as Record<string, string> | undefined)?.['tool-ledger'] === 'bin/tool-ledger.mjs';
    let cwd = ROOT;
    const scratch = await mkdtemp(path.join(tmpdir(), 'tool-ledger-bin-'));
    try {
      if (!declared) {
        cwd = path.join(scratch, 'project');
        await mkdir(cwd);
        await writeFile(
          path.join(cwd, 'package.json'),
          JSON.stringify({ ...pkg, bin: { 'tool-ledger': 'bin/tool-ledger.mjs' } }, null, 2),
        );
        await symlink(path.join(ROOT, 'bin'), path.join(cwd, 'bin'));
        await symlink(path.join(ROOT, 'node_modules'), path.join(cwd, 'node_modules'));
        await symlink(path.join(ROOT, 'package-lock.json'), path.join(cwd, 'package-lock.json'));
      }
      const { stdout, stderr } = await promisify(execFile)(
        'npx',
        ['--no', '--offline', 'tool-ledger', '--help'],
        {
          cwd,
          env: {
            ...process.env,
            npm_config_cache: path.join(scratch, 'npm-cache'),
            npm_config_update_notifier: 'false',
            npm_config_fund: 'false',
          },
        },
      );
      expect(stdout).toContain('Usage: tool-ledger <command> [options]');
      expect(stdout).toMatch(/^ {2}reconcile\s/m);
      expect(stderr).toBe('');
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('exits 2 on a usage error as a real process', { timeout: 120_000 }, async () => {
    const error = await promisify(execFile)(
      process.execPath,
      [path.join(ROOT, 'bin/tool-ledger.mjs'), 'bogus'],
      {
        cwd: ROOT,
      },
    ).catch((e: { code: number; stderr: string }) => e);
    expect(error).toMatchObject({ code: 2, stderr: expect.stringContaining("unknown command 'bogus'") });
  });
});
