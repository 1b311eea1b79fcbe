/** The value at quantile `q` (0..1) of a sample, nearest rank; NaN for an empty sample. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Median of a sample. */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** 99th percentile of a sample. */
export function p99(values: readonly number[]): number {
  return quantile(values, 0.99);
}

/** Arithmetic mean; NaN for an empty sample. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return values.reduce((a, b) => a + b, 0) / values.length;
}
