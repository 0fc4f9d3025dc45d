/** Summaries of repeated measurements: median, range, spread. */

/** Median of a non-empty list (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Median, min, max and spread ((max − min) / median, in %) of repeated figures. */
export function summarize(values: readonly number[]): { median: number; min: number; max: number; spreadPct: number } {
  const m = median(values)
  const min = Math.min(...values)
  const max = Math.max(...values)
  return { median: m, min, max, spreadPct: m > 0 ? (100 * (max - min)) / m : 0 }
}

/** Rounds for the results file (figures are noisy well before the third digit). */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}
