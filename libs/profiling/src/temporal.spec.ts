import { compareTemporalKeys, isIsoDate, isIsoTimestamp, temporalKey } from './temporal';

describe('temporal', () => {
  it('validates the calendar, including leap years', () => {
    expect(isIsoDate('2000-02-29')).toBe(true);
    expect(isIsoDate('1900-02-29')).toBe(false);
    expect(isIsoDate('2023-04-31')).toBe(false);
    expect(isIsoDate('2023-4-1')).toBe(false);
  });

  it('accepts the documented timestamp shapes only', () => {
    expect(isIsoTimestamp('2024-01-05T10:00')).toBe(true);
    expect(isIsoTimestamp('2024-01-05T10:00Z')).toBe(true);
    expect(isIsoTimestamp('2024-01-05T10:00:00.5+0100')).toBe(true);
    expect(isIsoTimestamp('2024-01-05T10')).toBe(false);
    expect(isIsoTimestamp('2024-01-05T10:00:00.')).toBe(false);
    expect(isIsoTimestamp('2024-01-05t10:00')).toBe(false);
  });

  it('orders instants across offsets and sub-millisecond fractions', () => {
    const key = (value: string) => {
      const k = temporalKey(value);
      if (!k) throw new Error(`not temporal: ${value}`);
      return k;
    };
    expect(compareTemporalKeys(key('2024-01-05T10:00:00+02:00'), key('2024-01-05T09:00:00Z'))).toBeLessThan(
      0,
    );
    expect(
      compareTemporalKeys(key('2024-01-05T10:00:00.0000001'), key('2024-01-05T10:00:00')),
    ).toBeGreaterThan(0);
    expect(compareTemporalKeys(key('2024-01-05'), key('2024-01-05T00:00:00Z'))).toBe(0);
    expect(key('1970-01-02')).toEqual({ seconds: 86400, nanos: 0 });
    expect(key('0099-12-31T23:59:59Z').seconds).toBeLessThan(key('0100-01-01').seconds);
  });
});
