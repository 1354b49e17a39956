/** Order statistics over numbers already sorted ascending; pure and order-independent. */

export interface Quantiles {
  p1: number;
  p25: number;
  p50: number;
  p75: number;
  p99: number;
}

/**
 * Linear interpolation between closest ranks (Hyndman & Fan type 7, the numpy/R default), so a
 * quantile of [1, 2, 3, 4] at 0.5 is 2.5. `sorted` must be non-empty.
 */
export function quantile(sorted: readonly number[], p: number): number {
  const position = (sorted.length - 1) * p;
  const lower = Math.floor(position);
  const below = sorted[lower];
  if (lower === position) return below;
  const above = sorted[Math.ceil(position)];
  const gap = above - below;
  // A gap past the double range would make the step Infinity; weights keep it finite.
  const fraction = position - lower;
  const value = Number.isFinite(gap) ? below + fraction * gap : below * (1 - fraction) + above * fraction;
  // Rounding (here and in clean) may step past a neighbour: clamped, results stay monotone and in range.
  return Math.min(Math.max(clean(value), below), above);
}

/**
 * Drops binary rounding noise (1.9100000000000001 → 1.91) so reports read as people expect; 15
 * significant digits is the most a double always round-trips.
 */
function clean(value: number): number {
  return Number(value.toPrecision(15));
}

export function quantiles(sorted: number[]): Quantiles {
  return {
    p1: quantile(sorted, 0.01),
    p25: quantile(sorted, 0.25),
    p50: quantile(sorted, 0.5),
    p75: quantile(sorted, 0.75),
    p99: quantile(sorted, 0.99),
  };
}

export function mean(values: number[]): number {
  let sum = 0;
  for (const value of values) sum += value;
  return clean(sum / values.length);
}

/** Population standard deviation: the sample is described as it is, not as an estimate. */
export function stddev(values: number[], average: number): number {
  let squares = 0;
  for (const value of values) squares += (value - average) ** 2;
  return clean(Math.sqrt(squares / values.length));
}

/** Rounds to a fixed number of decimals, e.g. rates reported to 4 places. */
export function roundTo(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

/** Code-unit order: identical everywhere, unlike localeCompare. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
