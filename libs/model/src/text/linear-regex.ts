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
  /**
   * The same answer on the text of ASCII bytes [start, end) without decoding them (every byte below
   * 0x80 is the caller's to check); null when the pattern has no such form.
   */
  readonly testAscii: AsciiTest | null;
  /** `/pattern/`, like a RegExp (Ajv keys its compiled patterns by it). */
  toString(): string;
}

/** Whether a pattern matches the text of ASCII bytes [start, end). */
export type AsciiTest = (bytes: Uint8Array, start: number, end: number) => boolean;

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
  const form = linearForm(pattern);
  if (form !== null) {
    try {
      const v8 = new RegExp(pattern, 'u');
      return {
        engine: 'v8',
        test: (text) => v8.test(text),
        testAscii: asciiForm(form),
        toString: () => `/${pattern}/`,
      };
    } catch {
      // Not valid JavaScript syntax (e.g. a lone `]`): re2js reads it.
    }
  }
  return { engine: 're2', test: (text) => re2.test(text), testAscii: null, toString: () => `/${pattern}/` };
}

/** The conservative check described at the top of the file. */
export function backtrackingIsLinear(pattern: string): boolean {
  return linearForm(pattern) !== null;
}

/** One single-character atom of a linear pattern (its source) and how many times it repeats. */
interface Atom {
  readonly source: string;
  readonly min: number;
  /** Infinity for `*`, `+` and `{n,}`. */
  readonly max: number;
}

/** A pattern of the linear class: `^`, its atoms in order, and whether `$` ends it. */
interface LinearForm {
  readonly atoms: readonly Atom[];
  readonly anchoredEnd: boolean;
}

/** The pattern's atoms when it is of the class described at the top of the file; null otherwise. */
function linearForm(pattern: string): LinearForm | null {
  const p = [...pattern];
  if (p[0] !== '^') return null;
  const atoms: Atom[] = [];
  let anchoredEnd = false;
  let unbounded = 0;
  let choices = 1;
  let i = 1;
  while (i < p.length) {
    const c = p[i];
    if (c === '$') {
      if (i !== p.length - 1) return null;
      anchoredEnd = true;
      i++;
      continue;
    }
    const from = i;
    if (c === '\\') {
      const e = p[i + 1];
      if (e === undefined || !(CLASS_ESCAPES.has(e) || SYNTAX.has(e))) return null;
      i += 2;
    } else if (c === '[') {
      const end = classEnd(p, i);
      if (end < 0) return null;
      i = end + 1;
    } else if (SYNTAX.has(c) && c !== '-' && c !== '/') return null;
    else i++;
    const source = p.slice(from, i).join('');
    // A quantifier on the atom just read.
    const q = p[i];
    let [min, max] = [1, 1];
    if (q === '*' || q === '+') {
      [min, max] = [q === '*' ? 0 : 1, Infinity];
      unbounded++;
      i++;
    } else if (q === '?') {
      [min, max] = [0, 1];
      choices *= 2;
      i++;
    } else if (q === '{') {
      const m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(p.slice(i, i + 12).join(''));
      if (m === null) return null;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (max === Infinity) unbounded++;
      else choices *= max - min + 1;
      i += m[0].length;
    } else {
      atoms.push({ source, min, max });
      continue;
    }
    if (p[i] === '?') i++; // lazy: the same answer for test()
    if (unbounded > 1 || choices > MAX_CHOICES) return null;
    atoms.push({ source, min, max });
  }
  return { atoms, anchoredEnd };
}

/** Above this many NFA states a pattern keeps to its text form (V8 on the decoded text). */
const MAX_STATES = 256;

/**
 * The pattern on ASCII bytes, giving V8's answer on their text, for a pattern V8 runs (see above).
 * What each atom matches is asked of V8 itself, one ASCII character at a time, so classes and
 * escapes mean exactly what they mean to the text form. The atoms then run as a Thompson NFA (a
 * state per atom and count so far), linear in the bytes; a fixed-length pattern is one pass.
 */
function asciiForm(form: LinearForm): AsciiTest | null {
  const sets: Uint8Array[] = [];
  for (const atom of form.atoms) {
    let re: RegExp;
    try {
      re = new RegExp(`^${atom.source}$`, 'u');
    } catch {
      return null;
    }
    sets.push(Uint8Array.from({ length: 128 }, (_, x) => (re.test(String.fromCharCode(x)) ? 1 : 0)));
  }
  const { atoms, anchoredEnd } = form;
  if (anchoredEnd && atoms.every((a) => a.min === a.max)) {
    const each = atoms.flatMap((a, k) => Array.from({ length: a.min }, () => sets[k]));
    if (each.length > MAX_STATES) return null;
    return (b, s, e) => {
      if (e - s !== each.length) return false;
      for (let k = 0; k < each.length; k++) if (each[k][b[s + k]] !== 1) return false;
      return true;
    };
  }
  // State (atom i, count c): atom i matched c times, c up to its max (its min when unbounded, which
  // then loops on itself). States of atom i are base[i] + c; the last index accepts.
  const caps = atoms.map((a) => (a.max === Infinity ? a.min : a.max));
  const base: number[] = [];
  let accept = 0;
  for (const cap of caps) {
    base.push(accept);
    accept += cap + 1;
  }
  if (accept > MAX_STATES) return null;
  const size = accept + 1;
  const setOf: Uint8Array[] = new Array<Uint8Array>(accept);
  const step = new Int32Array(accept);
  const skip = new Int32Array(accept);
  atoms.forEach((a, i) => {
    for (let c = 0; c <= caps[i]; c++) {
      const k = base[i] + c;
      setOf[k] = sets[i];
      step[k] = c < a.max ? base[i] + Math.min(c + 1, caps[i]) : -1;
      skip[k] = c >= a.min ? (i + 1 < atoms.length ? base[i + 1] : accept) : -1;
    }
  });
  // A skip always goes forward, so one pass in index order closes a set.
  const close = (v: Uint8Array): void => {
    for (let k = 0; k < accept; k++) if (v[k] === 1 && skip[k] >= 0) v[skip[k]] = 1;
  };
  let cur = new Uint8Array(size);
  let next = new Uint8Array(size);
  return (b, s, e) => {
    cur.fill(0);
    cur[0] = 1;
    close(cur);
    for (let p = s; p < e; p++) {
      if (!anchoredEnd && cur[accept] === 1) return true;
      next.fill(0);
      const x = b[p];
      let alive = false;
      for (let k = 0; k < accept; k++) {
        if (cur[k] === 1 && step[k] >= 0 && setOf[k][x] === 1) {
          next[step[k]] = 1;
          alive = true;
        }
      }
      if (!alive) return false;
      close(next);
      [cur, next] = [next, cur];
    }
    return cur[accept] === 1;
  };
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
