import fc from 'fast-check';
import { compareStrings, mean, quantile, quantiles, roundTo, stddev } from './stats';

describe('stats', () => {
  it('interpolates quantiles linearly between ranks', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(quantile(sorted, 0.5)).toBe(5.5);
    expect(quantiles(sorted)).toEqual({ p1: 1.09, p25: 3.25, p50: 5.5, p75: 7.75, p99: 9.91 });
    expect(quantiles([42])).toEqual({ p1: 42, p25: 42, p50: 42, p75: 42, p99: 42 });
  });

  it('computes mean and population stddev', () => {
    const values = [2, 4, 4, 4, 5, 5, 7, 9];
    expect(mean(values)).toBe(5);
    expect(stddev(values, 5)).toBe(2);
  });

  it('rounds and compares deterministically', () => {
    expect(roundTo(1 / 3, 4)).toBe(0.3333);
    expect(['b', 'B', 'a', 'é'].sort(compareStrings)).toEqual(['B', 'a', 'b', 'é']);
  });
});

describe('quantile against a reference implementation', () => {
  /** numpy's "linear" method written out plainly: h = (n − 1)·q, then interpolate x[⌊h⌋] → x[⌊h⌋ + 1]. */
  function reference(sorted: readonly number[], q: number): number {
    const h = (sorted.length - 1) * q;
    const j = Math.floor(h);
    if (j + 1 >= sorted.length) return sorted[sorted.length - 1];
    return sorted[j] + (h - j) * (sorted[j + 1] - sorted[j]);
  }
  const sorted = fc
    .array(
      fc.oneof(
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.double({ min: -1e9, max: 1e9, noNaN: true }),
      ),
      {
        minLength: 1,
        maxLength: 40,
      },
    )
    .map((v) => [...v].sort((a, b) => a - b));
  const q = fc.double({ min: 0, max: 1, noNaN: true });

  it('agrees within rounding, is monotone in q and stays within [min, max]', () => {
    fc.assert(
      fc.property(sorted, q, q, (xs, a, b) => {
        const scale = Math.max(1, Math.abs(xs[0]), Math.abs(xs[xs.length - 1]));
        expect(Math.abs(quantile(xs, a) - reference(xs, a))).toBeLessThanOrEqual(1e-9 * scale);
        const [low, high] = a <= b ? [a, b] : [b, a];
        expect(quantile(xs, low)).toBeLessThanOrEqual(quantile(xs, high));
        expect(quantile(xs, a)).toBeGreaterThanOrEqual(xs[0]);
        expect(quantile(xs, a)).toBeLessThanOrEqual(xs[xs.length - 1]);
      }),
      { numRuns: 200 },
    );
  });
});
