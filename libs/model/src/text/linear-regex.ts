/**
 * Regular expressions from users (data-quality rules, validation schemas) in time linear in the
 * value, with a small constant. The syntax and meaning are RE2's (re2js): no backreferences, no
 * lookaround, and no pattern can backtrack catastrophically (`^(a+)+$` on any input is linear).
 *
 * re2js never backtracks, but its worst case per character grows with the pattern's program: a
 * hostile value can make it build a DFA state out of every live instruction at each character.
 * Measured on a 2-core host, about 1.4 µs a character at 54 instructions and 9 µs at 206, against
 * 10-50 ns on ordinary values. So a pattern of more than MAX_PROGRAM_SIZE instructions is refused.
 *
 * re2js also runs about 0.5 µs per short value, 15× slower than V8's backtracking engine. So a
 * pattern whose backtracking is provably cheap, and that means the same in both engines, runs on
 * V8: anchored with `^`, no groups, alternation, `.` or `\s`, quantifiers only on single characters
 * or classes, none lazy, at most one of them unbounded, and at most V8_STEPS_PER_CHAR backtracking
 * steps per character of the value by the count in backtrackingSteps. Everything else runs on
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

/**
 * The pattern is refused: not RE2 syntax, or too large to run in linear time with a small constant;
 * the message says why, in one clause.
 */
export class RegexSyntaxError extends Error {
  override readonly name = 'RegexSyntaxError';
}

const SYNTAX = new Set('^$\\.*+?()[]{}|/-');
const CLASS_ESCAPES = new Set('dDwW');

/**
 * Most backtracking steps V8 may take per character of the value (see backtrackingSteps). V8 takes
 * about 1.5 ns a step, so 16 is at most about 25 ns a character, what re2js spends on ordinary
 * values: a hostile value costs such a pattern no more than re2js would, and little enough that the
 * worker's main thread runs such rules on a small inline upload (32 KiB under 16 rules a column:
 * about 13 ms at worst). The simplest patterns take 2 (`^\d+$`), a short fixed tail after the run a
 * few more (`^\d+\.\d{2}$` 7). `^a*a{0,1000}a{0,8}$`, which V8 used to run, takes about 19,000
 * (25 µs a character).
 */
const V8_STEPS_PER_CHAR = 16;

/**
 * Most re2js instructions in a pattern. A bounded repeat copies what it repeats once per count
 * (`.{0,100}` is 204 instructions, `(ab){0,60}` 302), `+` and `*` do not (`(ab)*` is 7). re2js's
 * worst case per character grows with it (see the top of the file): about 11 µs at 256, by that
 * growth some 40 µs at this bound (`^\d*\d{1000}x$`, 1,007 instructions, measured 1.8 µs), so a
 * 30,000-character value takes at most about a second of a stage thread (where such patterns run,
 * under the stall watchdog). Common validation patterns fit: a length bound on a
 * class (`^[A-Za-z0-9 ]{1,255}$`, about 510), an HTML5 e-mail address (259), an RFC 1123 host name
 * (255); a bounded repeat of a thousand does not.
 */
export const MAX_PROGRAM_SIZE = 1024;

export function compileLinearRegex(pattern: string): LinearRegex {
  let re2: RE2JS;
  try {
    re2 = RE2JS.compile(pattern);
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(/^error parsing regexp: /, '');
    throw new RegexSyntaxError(`${why} (RE2 syntax: no backreferences or lookaround)`);
  }
  const form = linearForm(pattern);
  const testAscii = form === null ? null : asciiForm(form);
  const toString = (): string => `/${pattern}/`;
  if (form !== null && cheapOnV8(form)) {
    try {
      const v8 = new RegExp(pattern, 'u');
      return { engine: 'v8', test: (text) => v8.test(text), testAscii, toString };
    } catch {
      // Not valid JavaScript syntax (e.g. a lone `]`): re2js reads it.
    }
  }
  const size = re2.programSize();
  if (size > MAX_PROGRAM_SIZE) {
    throw new RegexSyntaxError(
      `it compiles to ${size} instructions, more than the ${MAX_PROGRAM_SIZE} that run in linear time ` +
        'with a small constant (a bounded repeat such as {0,100} copies what it repeats once per count; + and * do not)',
    );
  }
  return { engine: 're2', test: (text) => re2.test(text), testAscii, toString };
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
  /** Some quantifier is lazy (`*?`, `{1,3}?`): the same answers, another order of trying. */
  readonly lazy: boolean;
}

/**
 * Whether V8 runs the pattern cheaply (see the top of the file). Lazy quantifiers are left to
 * re2js: they try the counts that match least first, so a value that matches walks most of the
 * backtracking before it passes, and every rule of its column runs on it.
 */
function cheapOnV8(form: LinearForm): boolean {
  if (form.lazy) return false;
  const { fixed, perChar } = backtrackingSteps(form.atoms);
  const chars = form.atoms.reduce((sum, a) => (a.max === Infinity ? sum : sum + a.max), 0);
  // The bounded atoms' part is spread over the characters they can take.
  return perChar <= V8_STEPS_PER_CHAR && fixed <= V8_STEPS_PER_CHAR * Math.max(chars, 1);
}

/**
 * An upper bound on V8's backtracking steps for an anchored sequence of atoms on a value whose
 * unbounded atom takes n characters: `fixed + perChar·n`. V8 tries the atoms' counts depth first:
 * with the atoms before atom i counted, it reads up to max_i characters of atom i (a step each), then
 * tries each of its max_i − min_i + 1 counts in turn (a step each, then the atoms after it). So atom
 * i costs max_i + its counts steps for every combination of counts before it, and an unbounded atom
 * has up to n + 1 counts. `^a*a{0,1000}a{0,8}$`: about 19,000 steps a character. Two unbounded atoms
 * make it quadratic (perChar Infinity).
 */
export function backtrackingSteps(atoms: readonly Pick<Atom, 'min' | 'max'>[]): {
  fixed: number;
  perChar: number;
} {
  // Combinations of counts of the atoms so far: combos + combosPerChar·n.
  let combos = 1;
  let combosPerChar = 0;
  let fixed = 0;
  let perChar = 0;
  for (const { min, max } of atoms) {
    if (max === Infinity) {
      if (combosPerChar > 0) return { fixed, perChar: Infinity };
      fixed += combos;
      perChar += 2 * combos;
      combosPerChar = combos;
      continue;
    }
    const counts = max - min + 1;
    fixed += combos * (max + counts);
    perChar += combosPerChar * (max + counts);
    combos *= counts;
    combosPerChar *= counts;
  }
  return { fixed, perChar };
}

/** The pattern's atoms when it is a sequence of quantified single-character atoms; null otherwise. */
function linearForm(pattern: string): LinearForm | null {
  const p = [...pattern];
  if (p[0] !== '^') return null;
  const atoms: Atom[] = [];
  let anchoredEnd = false;
  let lazy = false;
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
      i++;
    } else if (q === '?') {
      [min, max] = [0, 1];
      i++;
    } else if (q === '{') {
      const m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(p.slice(i, i + 12).join(''));
      if (m === null) return null;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      i += m[0].length;
    } else {
      atoms.push({ source, min, max });
      continue;
    }
    if (p[i] === '?') {
      lazy = true;
      i++;
    }
    atoms.push({ source, min, max });
  }
  return { atoms, anchoredEnd, lazy };
}

/** Above this many NFA states a pattern keeps to its text form. */
const MAX_STATES = 256;

/**
 * The pattern on ASCII bytes, giving its answer on their text, for a pattern of the linear form
 * (whichever engine runs its text: they agree on it). What each atom matches is asked of V8 itself,
 * one ASCII character at a time, so classes and escapes mean exactly what they mean to the text
 * form. The atoms then run as a Thompson NFA (a state per atom and count so far), linear in the
 * bytes; a fixed-length pattern is one pass.
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
  const step = new Int32Array(size).fill(-1);
  const skip = new Int32Array(size).fill(-1);
  atoms.forEach((a, i) => {
    for (let c = 0; c <= caps[i]; c++) {
      const k = base[i] + c;
      setOf[k] = sets[i];
      step[k] = c < a.max ? base[i] + Math.min(c + 1, caps[i]) : -1;
      skip[k] = c >= a.min ? (i + 1 < atoms.length ? base[i + 1] : accept) : -1;
    }
  });
  // The live states as a list, so that a byte costs the states alive rather than all of them (a
  // long bounded run such as \w{1,255} keeps two alive). A state is in the set of the step that
  // marked it last; the step number wraps after 2^32 bytes, when the marks are cleared.
  let cur = new Int32Array(size);
  let next = new Int32Array(size);
  const mark = new Uint32Array(size);
  let now = 0;
  const tick = (): void => {
    if (now === 0xffffffff) {
      mark.fill(0);
      now = 0;
    }
    now++;
  };
  // Adds state k to `list` (n long) and the states its skips reach (one chain: a state has at most
  // one skip); returns the new length.
  const add = (list: Int32Array, n: number, k: number): number => {
    while (k >= 0 && mark[k] !== now) {
      mark[k] = now;
      list[n++] = k;
      k = skip[k];
    }
    return n;
  };
  return (b, s, e) => {
    tick();
    let n = add(cur, 0, 0);
    for (let p = s; p < e; p++) {
      if (!anchoredEnd && mark[accept] === now) return true;
      const x = b[p];
      tick();
      let m = 0;
      for (let j = 0; j < n; j++) {
        const k = cur[j];
        const to = step[k];
        if (to >= 0 && setOf[k][x] === 1) m = add(next, m, to);
      }
      if (m === 0) return false;
      [cur, next] = [next, cur];
      n = m;
    }
    return mark[accept] === now;
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
