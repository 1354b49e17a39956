import fc from 'fast-check';
import { RE2JS } from 're2js';
import { RegexSyntaxError, backtrackingIsLinear, compileLinearRegex } from './linear-regex';

describe('compileLinearRegex', () => {
  it('runs a catastrophic-backtracking pattern in linear time', () => {
    for (const pattern of ['^(a+)+$', '(x+x+)+y', '^(a|a)*$', '^(.*a){20}$']) {
      const re = compileLinearRegex(pattern);
      expect(re.engine).toBe('re2');
      const started = process.hrtime.bigint();
      expect(re.test(`${'a'.repeat(5000)}!`)).toBe(false);
      expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
    }
  });

  it('refuses what RE2 cannot run, saying why', () => {
    for (const [pattern, why] of [
      ['(a)\\1', /invalid escape sequence/],
      ['a(?=b)', /unsupported Perl syntax/],
      ['(?<!x)y', /invalid named capture|unsupported Perl syntax/],
      ['[', /missing closing \]/],
    ] as const) {
      let err: unknown;
      try {
        compileLinearRegex(pattern);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RegexSyntaxError);
      expect((err as Error).message).toMatch(why);
      expect((err as Error).message).toMatch(/RE2 syntax: no backreferences or lookaround/);
    }
  });

  it('runs simple anchored patterns on V8 and everything else on re2js', () => {
    expect(compileLinearRegex('^[A-Z]{2}\\d+$').engine).toBe('v8');
    expect(compileLinearRegex('^\\d{5}(-\\d{4})?$').engine).toBe('re2'); // a group
    expect(compileLinearRegex('^[^@]+@[^@]+$').engine).toBe('re2'); // two unbounded
    expect(compileLinearRegex('[A-Z]+').engine).toBe('re2'); // unanchored
    expect(compileLinearRegex('^a.b$').engine).toBe('re2'); // `.` differs between engines
    expect(backtrackingIsLinear('^a{0,1000}b{0,1000}c$')).toBe(false);
  });

  it('gives the same answers as re2js on the V8 path (property)', () => {
    const atom = fc.constantFrom(
      'a',
      'b',
      'Z',
      '0',
      '\\d',
      '\\w',
      '\\W',
      '\\.',
      '[a-c]',
      '[^b]',
      '[\\d_]',
      'é',
      '😀',
      '-',
    );
    const quant = fc.constantFrom('', '', '*', '+', '?', '{2}', '{0,3}', '{1,}', '+?');
    const pattern = fc
      .array(fc.tuple(atom, quant), { minLength: 1, maxLength: 6 })
      .chain((parts) =>
        fc.boolean().map((end) => `^${parts.map(([a, q]) => a + q).join('')}${end ? '$' : ''}`),
      );
    const text = fc.stringMatching(/^[ab0Z_.é😀\n -]{0,12}$/u);
    fc.assert(
      fc.property(pattern, text, (p, t) => {
        const re = compileLinearRegex(p);
        if (re.engine !== 'v8') return true;
        return re.test(t) === RE2JS.compile(p).test(t);
      }),
      { numRuns: 3000, seed: 18 },
    );
  });
});
