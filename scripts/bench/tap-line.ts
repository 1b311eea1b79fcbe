/**
 * The line local mode's DynamoDB tap (dynamo-tap.ts) prints with its address, stated once for the tap
 * and the benchmark that reads it (the tap itself cannot be imported here: importing it installs it).
 */

/** The line, from the tap's address. */
export function tapLine(url: string): string {
  return `bench-dynamo-tap ${url}`;
}

/** The tap's address in one of local mode's stdout lines, if the line is the tap's. */
export function tapUrlOf(line: string): string | undefined {
  return /^bench-dynamo-tap (http:\/\/127\.0\.0\.1:\d+)$/.exec(line)?.[1];
}
