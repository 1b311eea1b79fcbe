import { Duration } from 'aws-cdk-lib';

/**
 * The contract, §8: a terminal record must outlive every message that could still name its operation. A message
 * lives at most the work queue's retention, then the DLQ's (a redrive resets its age), and a day of
 * margin covers clock skew and the time an operator takes to redrive. If the record expired first, the
 * message would find no record and run the effect a second time.
 */

/** Margin added to the queues' retention. */
export const RETENTION_MARGIN = Duration.days(1);

/** What the check compares. */
export interface RetentionCheckInput {
  /** Default retention of terminal records (`TOOL_LEDGER_RETENTION_SECONDS`). */
  defaultRetention: Duration;
  /** Tools that set their own `retention`, by tool name. */
  toolRetentions: Readonly<Record<string, Duration>>;
  /** Work queue message retention. */
  queueRetention: Duration;
  /** Dead-letter queue message retention. */
  deadLetterRetention: Duration;
}

/** The shortest retention that is safe with these queues. */
export function minimumRetention(queueRetention: Duration, deadLetterRetention: Duration): Duration {
  return Duration.seconds(
    queueRetention.toSeconds() + deadLetterRetention.toSeconds() + RETENTION_MARGIN.toSeconds(),
  );
}

/**
 * Every retention that is too short, each as a sentence that says what to change; empty when all are
 * safe.
 *
 * @example
 * ```ts
 * checkRetention({
 *   defaultRetention: Duration.days(30),
 *   toolRetentions: { 'webhook.post': Duration.days(7) },
 *   queueRetention: Duration.days(4),
 *   deadLetterRetention: Duration.days(14),
 * }); // ['tool "webhook.post" keeps terminal records for 7 days ...']
 * ```
 */
export function checkRetention(input: RetentionCheckInput): string[] {
  const minimum = minimumRetention(input.queueRetention, input.deadLetterRetention);
  const budget =
    `a message can live ${days(minimum)} (work queue retention ${days(input.queueRetention)} + ` +
    `DLQ retention ${days(input.deadLetterRetention)} + ${days(RETENTION_MARGIN)} margin)`;
  const fix =
    `raise it to at least ${days(minimum)} (${minimum.toSeconds()} seconds), or shorten ` +
    'queueRetention / deadLetterRetention';
  const problems: string[] = [];
  const tooShort = (retention: Duration) => retention.toSeconds() < minimum.toSeconds();
  if (tooShort(input.defaultRetention)) {
    problems.push(
      `the default retention (retention) keeps terminal records for ${days(input.defaultRetention)}, but ` +
        `${budget}; a message that outlives its record would run the operation again: ${fix}.`,
    );
  }
  for (const [tool, retention] of Object.entries(input.toolRetentions)) {
    if (tooShort(retention)) {
      problems.push(
        `tool "${tool}" keeps terminal records for ${days(retention)}, but ${budget}; a message that ` +
          `outlives its record would run the operation again: ${fix} (the tool's \`retention\`, in seconds).`,
      );
    }
  }
  return problems;
}

/** Whole days as days; anything else in seconds, with the days rounded down so 19 days - 1 s never reads "19". */
function days(duration: Duration): string {
  const seconds = duration.toSeconds();
  const value = seconds / 86_400;
  if (Number.isInteger(value)) return `${value} day${value === 1 ? '' : 's'}`;
  return `${seconds} seconds (${(Math.floor(value * 100) / 100).toFixed(2)} days)`;
}
