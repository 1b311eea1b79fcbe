/** Thrown at synth time for a configuration that must not deploy; the message lists every problem. */
export class ToolLedgerConfigError extends Error {
  /** Each problem as one sentence. */
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`ToolLedger configuration is not safe to deploy:\n- ${problems.join('\n- ')}`);
    this.name = 'ToolLedgerConfigError';
    this.problems = problems;
  }
}
