import { EMAIL_PATTERN, suggestPattern, UUID_PATTERN } from './patterns';

describe('suggestPattern', () => {
  it.each<[string[], string | null]>([
    [['ada@example.com', 'bob@example.org'], EMAIL_PATTERN],
    [['3f1c2a9e-8b7d-4c1e-9f00-1a2b3c4d5e6f', '3F1C2A9E-8B7D-4C1E-9F00-1A2B3C4D5E6F'], UUID_PATTERN],
    [['AB123', 'CD4567', 'EF89'], '^[A-Z]{2}\\d+$'],
    [['00501', '10001', '02134'], '^\\d{5}$'],
    [['FR', 'DE', 'IT'], '^[A-Z]{2}$'],
    [['SKU-001.A', 'SKU-002.B'], '^[A-Z]{3}-\\d{3}\\.[A-Z]$'],
    [['A', 'BC', 'DEF'], null],
    [['Alice', 'Bob'], null],
    [['AB12', 'AB-12'], null],
    [['AB 12', 'CD 34'], null],
    [[], null],
  ])('%j → %s', (values, pattern) => {
    expect(suggestPattern(values)).toBe(pattern);
  });

  it('suggests patterns that match every value they were built from', () => {
    const values = ['X-1', 'YZ-22', 'Q-333'];
    const pattern = suggestPattern(values);
    expect(pattern).toBe('^[A-Z]+-\\d+$');
    expect(values.every((v) => new RegExp(pattern as string).test(v))).toBe(true);
    expect(new RegExp(pattern as string).test('x-1')).toBe(false);
  });
});
