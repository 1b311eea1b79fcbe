import type { CliIo } from '../../cli/io';
import { main } from '../../cli/main';
import type { AnyTool } from '../../functions/domain/tool';
import { createApiHandler } from '../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { HttpAdapter } from '../../functions/local/http-adapter';
import { TOKENS } from '../http/support';
import type { DynaliteHandle } from '../support/dynalite';
import { freshTable } from '../support/dynalite';
import { type TestLedger, testLedger } from '../support/harness';

/**
 * The CLI against the real API: the API handler on a dynalite-backed ledger, served over HTTP by local
 * mode's API Gateway adapter on a free loopback port, and `main` run in-process with writers that
 * collect what it prints. Tokens are those of the HTTP tests (two tenants, one token per role).
 */

/** What one CLI run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of one run. */
export interface RunOptions {
  /** Bearer token passed as `--token`; `null` passes none. @default 'operator-a' */
  token?: string | null;
  /** The terminal's yes/no answer; absent means there is no terminal. */
  confirm?: (question: string) => Promise<boolean>;
  /** The CLI's environment. @default {} (nothing leaks in from the test process) */
  env?: NodeJS.ProcessEnv;
  /** Pass `--endpoint`. @default true */
  endpoint?: boolean;
  /** What local mode's data folder holds as its tokens file (the CLI's default credentials). @default none */
  localTokens?: string;
}

/** A served API plus a way to run the CLI against it. */
export interface CliHarness {
  ledger: TestLedger;
  endpoint: string;
  /** Runs `tool-ledger <argv…> --endpoint <endpoint> [--token T]` in-process. */
  run(argv: string[], options?: RunOptions): Promise<CliRun>;
  /** How many times the CLI connected to the API (0: it refused before sending anything). */
  connections(): number;
  close(): Promise<void>;
}

/** Serves a fresh ledger with these tools and returns the harness. */
export async function serveCli(db: DynaliteHandle, tools: AnyTool[]): Promise<CliHarness> {
  const ledger = testLedger(db.client, await freshTable(db.client), tools, { approvalTtlSeconds: 3600 });
  const handler = createApiHandler({ deps: ledger.deps }, new BearerTokenAuthenticator(TOKENS));
  const adapter = new HttpAdapter(handler, { name: 'cli-test-api', timeoutMs: 30_000 });
  const endpoint = `http://127.0.0.1:${await adapter.listen(0)}`;
  let connections = 0;
  return {
    ledger,
    endpoint,
    async run(argv, options = {}) {
      let stdout = '';
      let stderr = '';
      const token = options.token === undefined ? 'operator-a' : options.token;
      const io: CliIo = {
        stdout: (text) => {
          stdout += text;
        },
        stderr: (text) => {
          stderr += text;
        },
        env: options.env ?? {},
        now: () => ledger.deps.clock(),
        connect: async (connection) => {
          connections += 1;
          const { HttpOperatorApi } = await import('../../cli/operator-api');
          return HttpOperatorApi.connect(connection);
        },
      };
      if (options.confirm) io.confirm = options.confirm;
      if (options.localTokens !== undefined) io.localTokens = () => options.localTokens;
      const args = [...argv];
      if (options.endpoint !== false) args.push('--endpoint', endpoint);
      if (token !== null) args.push('--token', token);
      const code = await main(args, io);
      return { code, stdout, stderr };
    },
    connections: () => connections,
    close: async () => {
      await adapter.close(1_000);
    },
  };
}
