/**
 * Regex suggestions for text columns: only shapes that are unambiguous and cheap to explain.
 * Patterns use syntax that JavaScript and Postgres (`~`) read the same way.
 *
 * Tried in order, first that matches every value wins:
 * 1. e-mail addresses: `^[^@\s]+@[^@\s]+$` (deliberately loose: the full grammar is not a rule).
 * 2. UUIDs (any case).
 * 3. Codes: values made only of uppercase ASCII letters, digits and the separators `- _ . / : #`
 *    that share one sequence of runs, e.g. `AB123`/`CD4567` → `^[A-Z]{2}\d+$`, `00501` → `^\d{5}$`.
 *    A run keeps its length as `{n}` when every value agrees, else `+`. Lowercase letters and spaces
 *    are left out: names and free text would produce rules that the next value breaks.
 */

export const EMAIL_PATTERN = '^[^@\\s]+@[^@\\s]+$';
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

type RunClass = 'upper' | 'digit' | 'literal';

interface Run {
  cls: RunClass;
  /** The character itself for literals; '' for classes. */
  text: string;
  length: number;
}

const SEPARATORS = '-_./:#';

function charClass(char: string): RunClass | null {
  if (char >= 'A' && char <= 'Z') return 'upper';
  if (char >= '0' && char <= '9') return 'digit';
  return SEPARATORS.includes(char) ? 'literal' : null;
}

/** Runs of one class; each separator is its own run. Null when a character has no place in a code. */
function runsOf(value: string): Run[] | null {
  const runs: Run[] = [];
  for (const char of value) {
    const cls = charClass(char);
    if (cls === null) return null;
    const last = runs[runs.length - 1];
    if (cls !== 'literal' && last?.cls === cls) last.length++;
    else runs.push({ cls, text: cls === 'literal' ? char : '', length: 1 });
  }
  return runs;
}

function sameShape(a: Run[], b: Run[]): boolean {
  return a.length === b.length && a.every((run, i) => run.cls === b[i].cls && run.text === b[i].text);
}

function renderRun(run: Run, lengths: Set<number>): string {
  if (run.cls === 'literal') return run.text === '.' ? '\\.' : run.text;
  const atom = run.cls === 'upper' ? '[A-Z]' : '\\d';
  if (lengths.size > 1) return `${atom}+`;
  const [length] = lengths;
  return length === 1 ? atom : `${atom}{${length}}`;
}

function codePattern(values: string[]): string | null {
  const shapes = values.map(runsOf);
  const first = shapes[0];
  if (!first || first.length === 0) return null;
  const consistent: Run[][] = [];
  for (const shape of shapes) {
    if (!shape || !sameShape(first, shape)) return null;
    consistent.push(shape);
  }
  const lengths = first.map((_, i) => new Set(consistent.map((shape) => shape[i].length)));
  // A lone variable-length letter run (`^[A-Z]+$`) rejects almost nothing worth rejecting.
  if (first.length === 1 && first[0].cls === 'upper' && lengths[0].size > 1) return null;
  return `^${first.map((run, i) => renderRun(run, lengths[i])).join('')}$`;
}

/** A pattern every value matches, or null when no shape is recognised. */
export function suggestPattern(values: string[]): string | null {
  if (values.length === 0) return null;
  for (const pattern of [EMAIL_PATTERN, UUID_PATTERN]) {
    const re = new RegExp(pattern);
    if (values.every((value) => re.test(value))) return pattern;
  }
  return codePattern(values);
}
