import { UNIQUE_MAX_VALUES, compileRule } from './data-quality-rules';

describe("compileRule: 'unique'", () => {
  const rule = { type: 'unique', column: 'id' } as const;

  it('answers duplicates of short and long values alike, and never a short value for a long one', () => {
    const check = compileRule(rule, 'string');
    const long = 'x'.repeat(10_000);
    expect(check('a')).toBeNull();
    expect(check(long)).toBeNull();
    expect(check(`${long}y`)).toBeNull();
    expect(check(null)).toBeNull();
    expect(check(null)).toBeNull();
    expect(check('a')).toBe("value 'a' is a duplicate (rule unique)");
    expect(check(long)).toMatch(/^value 'x+…?' is a duplicate \(rule unique\)$/);
    expect(check(`${long}y`)).toMatch(/is a duplicate/);
    // A short value that is, byte for byte, a long value's digest is a value of its own.
    const { createHash } = jest.requireActual<typeof import('node:crypto')>('node:crypto');
    expect(check(createHash('sha256').update(long).digest().toString('latin1'))).toBeNull();
  });

  it('fails the job, naming the rule, past its bound on distinct values (the worker keeps its memory)', () => {
    const check = compileRule(rule, 'string', 3);
    for (const v of ['1', '2', 'x'.repeat(100)]) expect(check(v)).toBeNull();
    // Duplicates are still answered at the bound.
    expect(check('2')).toMatch(/duplicate/);
    expect(() => check('4')).toThrow(
      "rule unique on column 'id' remembers at most 3 distinct values in one job: split the file, or let " +
        'the destination enforce it (a primary key with writeMode merge)',
    );
    expect(UNIQUE_MAX_VALUES).toBe(2_000_000);
  });
});
