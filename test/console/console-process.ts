import type { CliIo } from '../../cli/io';
import { main } from '../../cli/main';

/** A console started by `tool-ledger console`, run in-process the way the CLI tests run commands. */
export interface RunningConsole {
  /** The URL it printed, with the secret. */
  url: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** The secret of this run. */
  secret: string;
  /** Everything it wrote to stderr. */
  stderr(): string;
  /** Stops it (what Ctrl-C does) and returns its exit code. */
  stop(): Promise<number>;
}

const PRINTED = /^tool-ledger console (http:\/\/127\.0\.0\.1:\d+)\/#secret=([A-Za-z0-9_-]+)$/m;

/**
 * Runs `tool-ledger console --endpoint <api> --token <token> --port 0` and resolves once it printed
 * its URL (the event, not a delay).
 */
export async function startConsole(api: string, token: string): Promise<RunningConsole> {
  let stdout = '';
  let stderr = '';
  let printed: (match: RegExpExecArray) => void = () => {};
  const url = new Promise<RegExpExecArray>((resolve) => {
    printed = resolve;
  });
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const io: CliIo = {
    stdout: (text) => {
      stdout += text;
      const match = PRINTED.exec(stdout);
      if (match) printed(match);
    },
    stderr: (text) => {
      stderr += text;
    },
    env: {},
    untilStopped: () => stopped,
  };
  const exit = main(['console', '--endpoint', api, '--token', token, '--port', '0'], io);
  const match = await Promise.race([
    url,
    exit.then((code) => {
      throw new Error(`tool-ledger console exited with ${code} before printing its URL:\n${stderr}`);
    }),
  ]);
  return {
    url: match[0].slice('tool-ledger console '.length),
    origin: match[1] as string,
    secret: match[2] as string,
    stderr: () => stderr,
    stop: () => {
      stop();
      return exit;
    },
  };
}
