import fc from 'fast-check';
import { DEFAULT_THRESHOLDS, runChecks } from './checks';
import { ColumnProfile, Quantiles } from './column-profile';
import { diffProfiles, EvidenceDiff } from './diff';
import { RunProfile } from './run-profile';

function run(overrides: Partial<RunProfile> = {}): RunProfile {
  return {
    runId: 'run-1',
    source: 'landed-sample',
    recordCount: 100,
    columns: [],
    dqFailures: 0,
    dqPassRate: 1,
    durationMs: 1000,
    scriptSha: 'abc',
    tapVersion: 1,
    pipelineVersion: 1,
    sampledRows: 100,
    computedAt: '2024-01-01T00:00:00Z',
    ...overrides,
  };
}

function column(name: string, overrides: Partial<ColumnProfile> = {}): ColumnProfile {
  return { name, inferredType: 'number', nullRate: 0, distinct: 1, ...overrides };
}

const spread = (p1: number, p25: number, p50: number, p75: number, p99: number): Quantiles => ({
  p1,
  p25,
  p50,
  p75,
  p99,
});

const NO_CHANGE: EvidenceDiff = {
  columnsAdded: [],
  columnsRemoved: [],
  typeChanges: [],
  recordDeltaPct: 0,
  recordDeltaVsMeanOfLastN: 0,
  lastN: 0,
  nullRateDeltas: [],
  quantileShift: [],
  dqPassRateDelta: 0,
};

describe('diffProfiles', () => {
  it('lists added and removed columns sorted, and type changes on shared ones', () => {
    const baseline = run({ columns: [column('z'), column('amount'), column('b'), column('a')] });
    const candidate = run({
      columns: [column('y'), column('amount', { inferredType: 'string' }), column('c'), column('a')],
    });
    const diff = diffProfiles(baseline, candidate, []);
    expect(diff.columnsAdded).toEqual(['c', 'y']);
    expect(diff.columnsRemoved).toEqual(['b', 'z']);
    expect(diff.typeChanges).toEqual([{ column: 'amount', from: 'number', to: 'string' }]);
  });

  it.each([
    [100, 87, -13],
    [80, 70, -12.5],
    [3, 4, 33.33],
    [3, 2, -33.33],
    [0, 0, 0],
    [0, 5, 100],
    [5, 0, -100],
  ])('record delta %i → %i is %s%%', (before, after, pct) => {
    const diff = diffProfiles(run({ recordCount: before }), run({ recordCount: after }), []);
    expect(diff.recordDeltaPct).toBe(pct);
  });

  describe('record delta against recent real jobs', () => {
    const candidate = run({ recordCount: 90, sampledRows: 100 });

    it('compares the candidate output/input ratio with their mean', () => {
      expect(diffProfiles(run(), candidate, [1, 0.8])).toMatchObject({
        recordDeltaVsMeanOfLastN: 0,
        lastN: 2,
      });
      expect(diffProfiles(run(), candidate, [0.5, 0.5])).toMatchObject({
        recordDeltaVsMeanOfLastN: 80,
        lastN: 2,
      });
      expect(diffProfiles(run(), candidate, [0.7])).toMatchObject({
        recordDeltaVsMeanOfLastN: 28.57,
        lastN: 1,
      });
    });

    it('uses at most the 10 newest', () => {
      const ratios = [...Array<number>(10).fill(0.5), 0.1, 0.1];
      expect(diffProfiles(run(), candidate, ratios)).toMatchObject({
        recordDeltaVsMeanOfLastN: 80,
        lastN: 10,
      });
    });

    it('is 0 without jobs or with a zero mean', () => {
      expect(diffProfiles(run(), candidate, [])).toMatchObject({ recordDeltaVsMeanOfLastN: 0, lastN: 0 });
      expect(diffProfiles(run(), candidate, [0, 0])).toMatchObject({ recordDeltaVsMeanOfLastN: 0, lastN: 2 });
    });

    it('treats a candidate that read nothing as ratio 0', () => {
      const empty = run({ recordCount: 0, sampledRows: 0 });
      expect(diffProfiles(run(), empty, [0.5])).toMatchObject({ recordDeltaVsMeanOfLastN: -100, lastN: 1 });
    });
  });

  it('reports non-zero null-rate deltas of shared columns to 4 decimals', () => {
    const baseline = run({
      columns: [
        column('a', { nullRate: 0.1 }),
        column('b', { nullRate: 0.2 }),
        column('c', { nullRate: 0.5 }),
        column('d', { nullRate: 0 }),
        column('gone', { nullRate: 0 }),
      ],
    });
    const candidate = run({
      columns: [
        column('d', { nullRate: 0.123456 }),
        column('c', { nullRate: 0.2 }),
        column('b', { nullRate: 0.2 }),
        column('a', { nullRate: 0.35 }),
        column('new', { nullRate: 1 }),
      ],
    });
    expect(diffProfiles(baseline, candidate, []).nullRateDeltas).toEqual([
      { column: 'a', delta: 0.25 },
      { column: 'c', delta: -0.3 },
      { column: 'd', delta: 0.1235 },
    ]);
  });

  it('measures the median shift in baseline IQRs, or in |p50| (at least 1) when the IQR is 0', () => {
    const baseline = run({
      columns: [
        column('spread', { quantiles: spread(0, 10, 20, 30, 40) }),
        column('constant', { quantiles: spread(50, 50, 50, 50, 50) }),
        column('small', { quantiles: spread(0.2, 0.2, 0.2, 0.2, 0.2) }),
        column('same', { quantiles: spread(1, 2, 3, 4, 5) }),
        column('one-sided', { quantiles: spread(1, 2, 3, 4, 5) }),
      ],
    });
    const candidate = run({
      columns: [
        column('spread', { quantiles: spread(0, 10, 25, 30, 40) }),
        column('constant', { quantiles: spread(60, 60, 60, 60, 60) }),
        column('small', { quantiles: spread(0, 0, 0.7, 1, 1) }),
        column('same', { quantiles: spread(0, 0, 3, 9, 9) }),
        column('one-sided'),
      ],
    });
    expect(diffProfiles(baseline, candidate, []).quantileShift).toEqual([
      { column: 'constant', shift: 0.2 },
      { column: 'small', shift: 0.5 },
      { column: 'spread', shift: 0.25 },
    ]);
  });

  it('reports the data-quality pass-rate delta to 4 decimals', () => {
    const diff = diffProfiles(run({ dqPassRate: 0.95 }), run({ dqPassRate: 0.8 }), []);
    expect(diff.dqPassRateDelta).toBe(-0.15);
    expect(diffProfiles(run({ dqPassRate: 0.5 }), run({ dqPassRate: 2 / 3 }), []).dqPassRateDelta).toBe(
      0.1667,
    );
  });

  describe('a profile against itself', () => {
    const quantiles = fc
      .array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 5, maxLength: 5 })
      .map((v) => v.sort((a, b) => a - b))
      .map(([p1, p25, p50, p75, p99]) => spread(p1, p25, p50, p75, p99));
    const columnArb = fc.record(
      {
        name: fc.string({ maxLength: 6 }),
        inferredType: fc.constantFrom('number', 'string', 'boolean', 'date', 'timestamp'),
        nullRate: fc.double({ min: 0, max: 1, noNaN: true }),
        distinct: fc.nat(),
        quantiles,
      },
      { requiredKeys: ['name', 'inferredType', 'nullRate', 'distinct'] },
    );
    const profile = fc
      .record({
        columns: fc.uniqueArray(columnArb, { selector: (c) => c.name, maxLength: 8 }),
        sampledRows: fc.nat({ max: 1_000_000 }),
        kept: fc.double({ min: 0, max: 1, noNaN: true }),
        dqPassRate: fc.double({ min: 0.9, max: 1, noNaN: true }),
      })
      .map(({ columns, sampledRows, kept, dqPassRate }) =>
        run({ columns, sampledRows, recordCount: Math.round(sampledRows * kept), dqPassRate }),
      );

    it('shows no change and passes every default check', () => {
      fc.assert(
        fc.property(profile, fc.integer({ min: 0, max: 12 }), (p, jobs) => {
          // Recent jobs that kept exactly what the candidate kept: no deviation from their mean either.
          const ratio = p.sampledRows === 0 ? 0 : p.recordCount / p.sampledRows;
          const diff = diffProfiles(p, p, Array<number>(jobs).fill(ratio));
          expect(diff).toEqual({ ...NO_CHANGE, lastN: Math.min(jobs, 10) });
          expect(runChecks(diff, p, DEFAULT_THRESHOLDS).every((check) => check.passed)).toBe(true);
        }),
        { numRuns: 200 },
      );
    });
  });
});
