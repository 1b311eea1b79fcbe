/**
 * Settings of one load run, from flags (`--operations=500`) or the environment (`OPERATIONS=500`),
 * flags winning. Every number is bounded, so that a typo cannot start an unbounded run.
 */

/** What one run does. */
export interface LoadOptions {
  /** Distinct operations (operation IDs). */
  operations: number;
  /** Concurrent clients. */
  concurrency: number;
  /** Times each operation is sent (the same key and body every time). */
  sends: number;
  /** Inject faults: lost responses, duplicate SQS sends, a failing webhook target. */
  faults: boolean;
  /** SIGKILL local mode once, mid-run, and start it again on the same data folder. */
  restart: boolean;
  /** Seed of every random choice, so a run can be repeated. */
  seed: number;
  /** Longest the whole run may take, seconds; it stops by itself then. */
  timeoutSeconds: number;
  /**
   * Proves the duplicate check is live: local mode is told that the plain (non-deduplicating) webhook
   * target deduplicates, so uncertain calls to it are retried with the same key and land twice. The
   * run must then report duplicate effects and exit 1.
   */
  selfCheck: boolean;
}

/** Thrown for a setting out of range; the message names it. */
export class LoadOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LoadOptionsError';
  }
}

/**
 * Reads the options.
 *
 * @example
 * ```ts
 * parseLoadOptions(['--operations=100', '--faults=0'], {}); // { operations: 100, faults: false, ... }
 * ```
 */
export function parseLoadOptions(argv: readonly string[], env: NodeJS.ProcessEnv): LoadOptions {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!match) throw new LoadOptionsError(`unknown argument ${JSON.stringify(arg)} (use --name=value)`);
    flags.set((match[1] as string).replace(/-/g, '_').toUpperCase(), match[2] as string);
  }
  const raw = (name: string) => flags.get(name) ?? env[name];
  const int = (name: string, fallback: number, min: number, max: number) => {
    const text = raw(name);
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new LoadOptionsError(`${name} must be an integer from ${min} to ${max}`);
    }
    return value;
  };
  const bool = (name: string, fallback: boolean) => {
    const text = raw(name);
    if (text === undefined || text === '') return fallback;
    if (text === '1' || text === 'true') return true;
    if (text === '0' || text === 'false') return false;
    throw new LoadOptionsError(`${name} must be 0 or 1`);
  };
  const faults = bool('FAULTS', true);
  return {
    operations: int('OPERATIONS', 500, 1, 20_000),
    concurrency: int('CONCURRENCY', 32, 1, 256),
    sends: int('SENDS', 3, 1, 10),
    faults,
    restart: bool('RESTART', faults),
    seed: int('SEED', Math.floor(Math.random() * 2 ** 31), 0, 2 ** 31),
    timeoutSeconds: int('TIMEOUT_S', 600, 10, 3_600),
    selfCheck: bool('SELF_CHECK', false),
  };
}
