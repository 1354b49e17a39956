import fc from 'fast-check';
import { RE2JS } from 're2js';
import { MAX_PROGRAM_SIZE, RegexSyntaxError, backtrackingSteps, compileLinearRegex } from './linear-regex';

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

/**
 * CPU milliseconds of this process since `started`: these bounds tell milliseconds from seconds, and
 * on a loaded machine (the suite's own workers) the wall clock also counts the time others ran.
 */
function cpuMs(started: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

describe('compileLinearRegex', () => {
  it('runs a catastrophic-backtracking pattern in linear time', () => {
    for (const pattern of ['^(a+)+$', '(x+x+)+y', '^(a|a)*$', '^(.*a){20}$']) {
      const re = compileLinearRegex(pattern);
      expect(re.engine).toBe('re2');
      const started = process.cpuUsage();
      expect(re.test(`${'a'.repeat(5000)}!`)).toBe(false);
      expect(cpuMs(started)).toBeLessThan(1000);
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
    expect(compileLinearRegex('^\\w{1,64}$').engine).toBe('v8'); // one bounded run: 2 steps a character
    expect(compileLinearRegex('^\\d+\\.\\d{2}$').engine).toBe('v8'); // 7 steps a character
    expect(compileLinearRegex('^[a-z]+?$').engine).toBe('re2'); // lazy
    expect(compileLinearRegex('^\\w+\\d{0,8}$').engine).toBe('re2'); // 19 steps a character
  });

  it('gives the answers of V8 and of re2js, which agree on the linear form, whichever runs it (property)', () => {
    const atom = fc.constantFrom(...ATOMS, 'Z', '😀');
    const quant = fc.constantFrom('', '', '*', '+', '?', '{2}', '{0,3}', '{1,}', '{2,9}', '+?', '{0,2}?');
    const pattern = anchoredPatterns(atom, quant, 1);
    const text = fc.stringMatching(/^[ab0Z_.é😀\n -]{0,12}$/u);
    let onV8 = 0;
    fc.assert(
      fc.property(pattern, text, (p, t) => {
        const v8 = new RegExp(p, 'u').test(t);
        if (RE2JS.compile(p).test(t) !== v8) return false;
        const re = compileLinearRegex(p);
        if (re.engine === 'v8') onV8++;
        return re.test(t) === v8;
      }),
      { numRuns: 3000, seed: 18 },
    );
    expect(onV8).toBeGreaterThan(1000);
  });

  it("gives the text's answers on ASCII bytes without decoding them (property)", () => {
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

  it("refuses the audit's hostile patterns, and runs their smaller kin on re2js in linear time", () => {
    // 2,000 and more instructions, past MAX_PROGRAM_SIZE: re2js's worst case grows with the program.
    for (const p of [
      '^a*?a{0,1000}a{0,8}$',
      '^a*a{0,1000}a{0,8}$',
      '^\\d*\\d{1000}\\d{100}x$',
      '^a{0,1000}b{0,1000}c$',
    ]) {
      expect(() => compileLinearRegex(p)).toThrow(RegexSyntaxError);
      expect(() => compileLinearRegex(p)).toThrow(
        new RegExp(
          `compiles to \\d+ instructions, more than the ${MAX_PROGRAM_SIZE} that run in linear time`,
        ),
      );
    }
    const cell = 'a'.repeat(30_000);
    for (const p of [
      '^a*?a{0,100}a{0,8}$',
      '^a*a{0,100}a{0,8}$',
      '^a*?a{0,8}$',
      '^\\d*\\d{100}x$',
      '^a*?$',
    ]) {
      const re = compileLinearRegex(p);
      expect(re.engine).toBe('re2');
      const answers = [cell, `${cell}b`, `1${cell}`].map((value) => {
        const started = process.cpuUsage();
        const answer = re.test(value);
        // About 10 ms at most here; V8 took 0.6 s on the first.
        expect(cpuMs(started)).toBeLessThan(300);
        return answer;
      });
      expect(answers).toEqual([!p.includes('x'), false, false]);
    }
  });

  it('runs on V8 only patterns whose backtracking stays within 16 steps a character (property)', () => {
    expect(backtrackingSteps([{ min: 1, max: Infinity }])).toEqual({ fixed: 1, perChar: 2 });
    expect(
      backtrackingSteps([
        { min: 0, max: Infinity },
        { min: 0, max: 1000 },
        { min: 0, max: 8 },
      ]).perChar,
    ).toBe(2 + 2001 + 1001 * 17);
    expect(
      backtrackingSteps([
        { min: 0, max: Infinity },
        { min: 1, max: 1 },
        { min: 1, max: Infinity },
      ]).perChar,
    ).toBe(Infinity);
    // Atoms that all take 'a', so a run of them is the most backtracking a value can cause.
    const atom = fc.constantFrom('a', '[ab]', '\\w', '[^b]', '\\W');
    const quant = fc.constantFrom('', '*', '+', '?', '{2}', '{0,3}', '{1,}', '{2,9}', '{0,40}');
    const pattern = anchoredPatterns(atom, quant, 1);
    const hostile = ['a'.repeat(30_000), `${'a'.repeat(30_000)}!`, `${'a'.repeat(30_000)}b`];
    let onV8 = 0;
    fc.assert(
      fc.property(pattern, (p) => {
        const re = compileLinearRegex(p);
        if (re.engine !== 'v8') return true;
        onV8++;
        const started = process.cpuUsage();
        for (const value of hostile) re.test(value);
        // 16 steps a character is about 1 ms on 30,000; a quadratic or choices-times-length pattern takes seconds.
        return cpuMs(started) < 250;
      }),
      { numRuns: 400, seed: 4 },
    );
    expect(onV8).toBeGreaterThan(100);
  });
});
