import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../cli/io';
import { main } from '../../cli/main';

/** `tool-ledger console`'s command line: refused before anything listens or connects. */

async function run(argv: string[], io: Partial<CliIo> = {}) {
  let stdout = '';
  let stderr = '';
  let connections = 0;
  const code = await main(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env: {},
    connect: () => {
      connections += 1;
      throw new Error('must not connect');
    },
    ...io,
  });
  return { code, stdout, stderr, connections };
}

describe('tool-ledger console (command line)', () => {
  it('is listed in the help with its port option', async () => {
    expect((await run(['--help'])).stdout).toMatch(/\n {2}console +open the operators’ console/);
    const help = await run(['console', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--port N');
  });

  it('refuses a bad port, extra arguments or no way to stop, before connecting', async () => {
    const stop = { untilStopped: () => Promise.resolve() };
    for (const argv of [
      ['console', '--port', 'eighty'],
      ['console', '--port', '70000'],
      ['console', 'extra'],
    ]) {
      const result = await run(argv, stop);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.connections).toBe(0);
    }
    const noStop = await run(['console']);
    expect(noStop).toMatchObject({ code: 2, connections: 0 });
    expect(noStop.stderr).toContain('runs until stopped');
  });
});
