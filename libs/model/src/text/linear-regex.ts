/**
 * Regular expressions from users (data-quality rules, validation schemas) in linear time. The
 * syntax and meaning are RE2's (re2js): no backreferences, no lookaround, and no pattern can
 * backtrack catastrophically (`^(a+)+$` on any input is linear).
 *
 * re2js runs about 0.5 µs per short value, 15× slower than V8's backtracking engine. So a pattern
 * that V8 provably runs in linear time, and that means the same in both engines, runs on V8: anchored
 * with `^`, no groups, alternation, `.` or `\s`, quantifiers only on single characters or classes,
 * at most one of them unbounded, and the bounded ones multiplying to at most 10,000 choices. Such a
 * pattern backtracks over at most those choices times the input length. Everything else runs on
 * re2js. (A property test holds the two engines to the same answers.)
 */
import { RE2JS } from 're2js';

export interface LinearRegex {
  /** Which engine runs it (see above); for tests and benchmarks. */
  readonly engine: 'v8' | 're2';
  /** Whether the pattern matches anywhere in `text` (like RegExp.prototype.test). */
  test(text: string): boolean;
  /** `/pattern/`, like a RegExp (Ajv keys its compiled patterns by it). */
  toString(): string;
}

/** The pattern is not RE2 syntax; the message says why, in one clause. */
export class RegexSyntaxError extends Error {
  override readonly name = 'RegexSyntaxError';
}

const SYNTAX = new Set('^$\\.*+?()[]{}|/-');
const CLASS_ESCAPES = new Set('dDwW');
const MAX_CHOICES = 10_000;

export function compileLinearRegex(pattern: string): LinearRegex {
  let re2: RE2JS;
  try {
    re2 = RE2JS.compile(pattern);
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(/^error parsing regexp: /, '');
    throw new RegexSyntaxError(`${why} (RE2 syntax: no backreferences or lookaround)`);
  }
  if (backtrackingIsLinear(pattern)) {
    try {
      const v8 = new RegExp(pattern, 'u');
      return { engine: 'v8', test: (text) => v8.test(text), toString: () => `/${pattern}/` };
    } catch {
      // Not valid JavaScript syntax (e.g. a lone `]`): re2js reads it.
    }
  }
  return { engine: 're2', test: (text) => re2.test(text), toString: () => `/${pattern}/` };
}

/** The conservative check described at the top of the file. */
export function backtrackingIsLinear(pattern: string): boolean {
  const p = [...pattern];
  if (p[0] !== '^') return false;
  let unbounded = 0;
  let choices = 1;
  let i = 1;
  while (i < p.length) {
    const c = p[i];
    if (c === '$') {
      if (i !== p.length - 1) return false;
      i++;
      continue;
    }
    if (c === '\\') {
      const e = p[i + 1];
      if (e === undefined || !(CLASS_ESCAPES.has(e) || SYNTAX.has(e))) return false;
      i += 2;
    } else if (c === '[') {
      const end = classEnd(p, i);
      if (end < 0) return false;
      i = end + 1;
    } else if (SYNTAX.has(c) && c !== '-' && c !== '/') return false;
    else i++;
    // A quantifier on the atom just read.
    const q = p[i];
    if (q === '*' || q === '+') {
      unbounded++;
      i++;
    } else if (q === '?') {
      choices *= 2;
      i++;
    } else if (q === '{') {
      const m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(p.slice(i, i + 12).join(''));
      if (m === null) return false;
      if (m[2] !== undefined && m[3] === '') unbounded++;
      else if (m[3] !== undefined) choices *= Number(m[3]) - Number(m[1]) + 1;
      i += m[0].length;
    } else continue;
    if (p[i] === '?') i++; // lazy: the same answer for test()
    if (unbounded > 1 || choices > MAX_CHOICES) return false;
  }
  return true;
}

/** Index of the `]` closing the class opened at `start`, or -1 when the class is not simple. */
function classEnd(p: string[], start: number): number {
  let i = start + 1;
  if (p[i] === '^') i++;
  // `[]` and `[^]` mean different things in JavaScript and RE2.
  if (p[i] === ']') return -1;
  for (; i < p.length; i++) {
    const c = p[i];
    if (c === ']') return i;
    if (c === '[') return -1;
    if (c === '\\') {
      const e = p[i + 1];
      if (e === undefined || !(CLASS_ESCAPES.has(e) || SYNTAX.has(e))) return -1;
      i++;
    }
  }
  return -1;
}
