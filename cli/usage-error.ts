/**
 * The command line itself is wrong (unknown command or option, a missing or malformed argument, a
 * decision that needs confirmation and cannot get it). Nothing was sent; the CLI exits with 2.
 *
 * @example
 * ```ts
 * if (!outcome) throw new UsageError('resolve needs an outcome: applied, not_applied or failed', 'resolve');
 * ```
 */
export class UsageError extends Error {
  /** The command whose help to point at, if one was recognised. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}
