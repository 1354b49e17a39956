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
