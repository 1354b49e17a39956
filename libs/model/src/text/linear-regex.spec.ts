import fc from 'fast-check';
import { RE2JS } from 're2js';
import { RegexSyntaxError, backtrackingIsLinear, compileLinearRegex } from './linear-regex';

/** Single-character atoms of the linear class (ASCII and not). */
const ATOMS = ['a', 'b', '0', '\\d', '\\w', '\\W', '\\.', '[a-c]', '[^b]', '[\\d_]', 'é', '-'];

/** Patterns of `^`, up to six quantified atoms and an optional `$` (the linear class's shape). */
function anchoredPatterns(
  atom: fc.Arbitrary<string>,
  quant: fc.Arbitrary<string>,
  minLength: number,
): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(atom, quant), { minLength, maxLength: 6 })
    .chain((parts) =>
      fc.boolean().map((end) => `^${parts.map(([a, q]) => a + q).join('')}${end ? '$' : ''}`),
    );
}

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
    const atom = fc.constantFrom(...ATOMS, 'Z', '😀');
    const quant = fc.constantFrom('', '', '*', '+', '?', '{2}', '{0,3}', '{1,}', '+?');
    const pattern = anchoredPatterns(atom, quant, 1);
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

  it("gives V8's answers on ASCII bytes without decoding them (property)", () => {
    const atom = fc.constantFrom(...ATOMS, '/');
    const quant = fc.constantFrom('', '', '*', '+', '?', '{2}', '{0,3}', '{1,}', '{3,5}', '+?', '??');
    const pattern = anchoredPatterns(atom, quant, 0);
    const text = fc.stringMatching(/^[ab0c_.\n /-]{0,12}$/);
    let tested = 0;
    fc.assert(
      fc.property(pattern, text, fc.nat(3), (p, t, pad) => {
        const re = compileLinearRegex(p);
        if (re.testAscii === null) return true;
        tested++;
        // The cell lies inside a larger buffer, as on the fast path.
        const bytes = Buffer.from(`${'x'.repeat(pad)}${t}${'yz'.repeat(pad)}`, 'latin1');
        return re.testAscii(bytes, pad, pad + t.length) === new RegExp(p, 'u').test(t);
      }),
      { numRuns: 5000, seed: 7 },
    );
    expect(tested).toBeGreaterThan(3000);
  });

  it('has a byte form for the common shapes and none where the text decides', () => {
    for (const p of ['^\\d{5}$', '^[A-Z]{2}\\d+$', '^[a-z0-9._%+-]+@', '^$', '^', '^\\w{1,64}$']) {
      expect(compileLinearRegex(p).testAscii).not.toBeNull();
    }
    expect(compileLinearRegex('^\\d{5}(-\\d{4})?$').testAscii).toBeNull(); // re2js runs it
    expect(compileLinearRegex('^a{0,999}$').testAscii).toBeNull(); // 1,000 states
    const zip = compileLinearRegex('^\\d{5}$').testAscii!;
    const b = Buffer.from('x12345,1234,123456');
    expect([zip(b, 1, 6), zip(b, 7, 11), zip(b, 12, 18)]).toEqual([true, false, false]);
  });
});
