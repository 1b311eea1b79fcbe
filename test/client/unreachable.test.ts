import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main';
import { bearerToken, DeadlineExceededError, ToolLedgerClient, ToolLedgerError } from '../../client/index';
import { fakeClock } from './support/scripted-server';

/** A port on 127.0.0.1 that nothing listens on: bound once to learn a free one, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The real fetch, counting how many requests it was asked to send. */
function countingFetch(): { fetch: typeof fetch; sent: () => number } {
  let sent = 0;
  return {
    fetch: (input, init) => {
      sent += 1;
      return fetch(input, init);
    },
    sent: () => sent,
  };
}

describe('nothing listens at the endpoint', () => {
  it("with onUnreachable 'fail' the client says so after one request: code unreachable, the reason named", async () => {
    const port = await closedPort();
    const counting = countingFetch();
    const client = new ToolLedgerClient({
      endpoint: `http://127.0.0.1:${port}`,
      signer: bearerToken('t'),
      fetch: counting.fetch,
      onUnreachable: 'fail',
    });
    const error = await client.get('op-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerError);
    expect(error).toMatchObject({ code: 'unreachable' });
    expect((error as Error).message).toBe(`nothing answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(counting.sent()).toBe(1);
  });

  it('by default an agent keeps retrying until its deadline (a restarting ledger comes back)', async () => {
    const port = await closedPort();
    const counting = countingFetch();
    const client = new ToolLedgerClient({
      endpoint: `http://127.0.0.1:${port}`,
      fetch: counting.fetch,
      clock: fakeClock(),
      deadlineMs: 5_000,
      random: () => 0.5,
    });
    const error = await client.get('op-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(counting.sent()).toBeGreaterThan(1);
  });

  it('a port fetch refuses (bad port, e.g. 1) is unreachable after one attempt, even for an agent that retries', async () => {
    for (const onUnreachable of ['fail', 'retry'] as const) {
      const counting = countingFetch();
      const client = new ToolLedgerClient({
        endpoint: 'http://127.0.0.1:1',
        signer: bearerToken('t'),
        fetch: counting.fetch,
        clock: fakeClock(),
        deadlineMs: 5_000,
        onUnreachable,
      });
      const error = await client.get('op-1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolLedgerError);
      expect(error).toMatchObject({ code: 'unreachable' });
      expect((error as Error).message).toBe(
        'nothing can be sent to http://127.0.0.1:1 (bad port: fetch refuses port 1)',
      );
      expect(counting.sent()).toBe(1);
    }
  });

  it("the operators' CLI reports a port fetch refuses at once, with exit 1", async () => {
    let stderr = '';
    const code = await main(['list', '--endpoint', 'http://127.0.0.1:1', '--token', 't'], {
      stdout: () => {},
      stderr: (text) => {
        stderr += text;
      },
      env: {},
    });
    expect(code).toBe(1);
    expect(stderr).toContain('unreachable: nothing can be sent to http://127.0.0.1:1 (bad port');
    // `reconcile` sends its own request: the reason is named there too, not just the error's class.
    stderr = '';
    const reconcile = await main(['reconcile', '--endpoint', 'http://127.0.0.1:1', '--token', 't'], {
      stdout: () => {},
      stderr: (text) => {
        stderr += text;
      },
      env: {},
    });
    expect(reconcile).toBe(1);
    expect(stderr).toContain('unreachable: no answer from http://127.0.0.1:1 (bad port)');
  });

  it("the operators' CLI reports an unreachable endpoint at once, with exit 1", async () => {
    const port = await closedPort();
    let stdout = '';
    let stderr = '';
    const code = await main(['list', '--endpoint', `http://127.0.0.1:${port}`, '--token', 't'], {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      env: {},
    });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain(`nothing answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
  });
});
