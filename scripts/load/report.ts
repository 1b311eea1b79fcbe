/**
 * The figures of a load run as a markdown table, and the small statistics they need.
 */

/** The value at quantile `q` (0..1) of a sample, nearest rank; NaN for an empty sample. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

/** Counts of values, as `a 3, b 1`, largest first. */
export function tally(values: Iterable<string>): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([value, n]) => `${value} ${n}`)
    .join(', ');
}

/** A number with a fixed number of decimals, or `n/a`. */
export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/**
 * Renders rows as a two-column markdown table.
 *
 * @example
 * ```ts
 * markdownTable([['operations', '500']]); // '| figure | value |\n| --- | --- |\n| operations | 500 |'
 * ```
 */
export function markdownTable(rows: readonly [string, string][]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  return ['| figure | value |', '| --- | --- |', ...rows.map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`)].join(
    '\n',
  );
}
