import { Check, DEFAULT_THRESHOLDS, runChecks, Thresholds, verdictOf } from './checks';
import { EvidenceDiff } from './diff';
import { RunProfile } from './run-profile';

const CLEAN: EvidenceDiff = {
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

const CANDIDATE: RunProfile = {
  runId: 'run-2',
  source: 'landed-sample',
  recordCount: 100,
  columns: [],
  dqFailures: 0,
  dqPassRate: 1,
  durationMs: 1000,
  scriptSha: 'abc',
  tapVersion: 1,
  pipelineVersion: 2,
  sampledRows: 100,
  computedAt: '2024-01-01T00:00:00Z',
};

function checks(
  diff: Partial<EvidenceDiff> = {},
  candidate: Partial<RunProfile> = {},
  t: Partial<Thresholds> = {},
): Check[] {
  return runChecks({ ...CLEAN, ...diff }, { ...CANDIDATE, ...candidate }, { ...DEFAULT_THRESHOLDS, ...t });
}

const failed = (list: Check[]) => list.filter((c) => !c.passed).map((c) => c.name);
const named = (list: Check[], name: string) => list.find((c) => c.name === name);

describe('runChecks', () => {
  it('runs every check in order and passes a clean diff', () => {
    expect(checks()).toEqual([
      { name: 'record-delta', passed: true, observed: '0%', limit: '±20%' },
      { name: 'column-removal', passed: true, observed: 'none', limit: 'no removal' },
      { name: 'type-change', passed: true, observed: 'none', limit: 'no type change' },
      { name: 'dq-pass-rate', passed: true, observed: '1.0000', limit: '≥ 0.9000' },
      { name: 'null-rate-increase', passed: true, observed: 'no increase', limit: '≤ +0.1000' },
    ]);
  });

  it('fails record-delta alone past the limit either way', () => {
    const fewer = checks({ recordDeltaPct: -25 });
    expect(failed(fewer)).toEqual(['record-delta']);
    expect(named(fewer, 'record-delta')).toMatchObject({ observed: '−25%', limit: '±20%' });
    expect(failed(checks({ recordDeltaPct: 20.01 }))).toEqual(['record-delta']);
    expect(named(checks({ recordDeltaPct: -12.5 }), 'record-delta')).toMatchObject({
      passed: true,
      observed: '−12.5%',
    });
    expect(named(checks({ recordDeltaPct: 20 }), 'record-delta')).toMatchObject({
      passed: true,
      observed: '+20%',
    });
  });

  it('fails column-removal alone unless removal is allowed', () => {
    const removed = checks({ columnsRemoved: ['a', 'b'] });
    expect(failed(removed)).toEqual(['column-removal']);
    expect(named(removed, 'column-removal')).toMatchObject({ observed: 'a, b', limit: 'no removal' });
    const allowed = checks({ columnsRemoved: ['a'] }, {}, { allowColumnRemoval: true });
    expect(named(allowed, 'column-removal')).toMatchObject({ passed: true, limit: 'removal allowed' });
    const many = checks({ columnsRemoved: ['a', 'b', 'c', 'd', 'e'] });
    expect(named(many, 'column-removal')?.observed).toBe('a, b, c +2 more');
  });

  it('fails type-change alone unless type changes are allowed', () => {
    const changed = checks({ typeChanges: [{ column: 'amount', from: 'number', to: 'string' }] });
    expect(failed(changed)).toEqual(['type-change']);
    expect(named(changed, 'type-change')).toMatchObject({ observed: 'amount: number → string' });
    const allowed = checks(
      { typeChanges: [{ column: 'a', from: 'date', to: 'string' }] },
      {},
      { allowTypeChange: true },
    );
    expect(failed(allowed)).toEqual([]);
  });

  it('fails dq-pass-rate alone below the minimum', () => {
    const low = checks({}, { dqPassRate: 0.85 });
    expect(failed(low)).toEqual(['dq-pass-rate']);
    expect(named(low, 'dq-pass-rate')).toMatchObject({ observed: '0.8500', limit: '≥ 0.9000' });
    expect(failed(checks({}, { dqPassRate: 0.9 }))).toEqual([]);
  });

  it('fails null-rate-increase alone on the worst increase, naming its column', () => {
    const deltas = [
      { column: 'a', delta: 0.05 },
      { column: 'b', delta: 0.25 },
      { column: 'c', delta: -0.5 },
    ];
    const worse = checks({ nullRateDeltas: deltas });
    expect(failed(worse)).toEqual(['null-rate-increase']);
    expect(named(worse, 'null-rate-increase')).toMatchObject({ observed: 'b +0.2500', limit: '≤ +0.1000' });
    const fewerNulls = checks({ nullRateDeltas: [{ column: 'c', delta: -0.5 }] });
    expect(named(fewerNulls, 'null-rate-increase')).toMatchObject({ passed: true, observed: 'no increase' });
    expect(failed(checks({ nullRateDeltas: [{ column: 'a', delta: 0.1 }] }))).toEqual([]);
  });
});

describe('verdictOf', () => {
  const pass = checks();
  const fail = checks({ recordDeltaPct: 50 });

  it('passes when every check passed', () => {
    expect(verdictOf(pass, true)).toBe('pass');
  });

  it('fails when any check failed', () => {
    expect(verdictOf(fail, true)).toBe('fail');
  });

  it('asks a human when the evidence is not trustworthy, whatever the checks say', () => {
    expect(verdictOf(pass, false)).toBe('needs-human');
    expect(verdictOf(fail, false)).toBe('needs-human');
  });
});
