// Loaded by the stage thread (see row-plan.ts): only deep-importable modules here.
import { createHash } from 'node:crypto';
import type { DataQualityRule, FieldType, SchemaField } from '@tapyard/model';
import { compileLinearRegex, type LinearRegex } from '@tapyard/model';
import type { CsvCell, CsvCellRule } from '@tapyard/readers';

/** One rule on one value (the cell trimmed, or null): why it fails, or null when it passes. */
export type Check = (value: string | null) => string | null;

/**
 * The rule kinds the CSV fast path checks on the raw bytes' fields: each is a pure function of one
 * value. `unique` remembers every value of the job, which the chunks that go out unparsed would
 * have to share with those the validating path reads: a pipeline with it reads every record.
 */
const FAST_PATH_RULES: ReadonlySet<DataQualityRule['type']> = new Set([
  'not_null',
  'range',
  'regex',
  'allowed_values',
  'type_conformance',
]);

/** Whether the fast path can take a pipeline with these rules (see fastPathCellRules). */
export function rulesOnFastPath(rules: readonly DataQualityRule[]): boolean {
  return rules.every((r) => FAST_PATH_RULES.has(r.type));
}

/**
 * Per file column, the rules of its schema column for the fast path's byte check (null: none). A
 * cell passes exactly when RowPlan.process lets its value through: the same value (the cell trimmed,
 * null for NULL) and the same compiled checks, or forms on the bytes that give the same answers
 * (see cellRule). The byte check only accepts cells whose typed value is null exactly when the cell
 * is, which is what RowPlan's checks see. Null as a whole when the rules cannot be checked so: a
 * kind outside FAST_PATH_RULES, or a rule that fails the NULL of a schema column the file lacks
 * (every record is then rejected, which only the validating path says).
 */
export function fastPathCellRules(
  rules: readonly DataQualityRule[],
  fields: readonly SchemaField[],
  fileColumns: readonly string[],
): (CsvCellRule | null)[] | null {
  if (!rulesOnFastPath(rules)) return null;
  const out: (CsvCellRule | null)[] = fileColumns.map(() => null);
  for (const field of fields) {
    const own = rules.filter((r) => r.column === field.name && r.type !== 'type_conformance');
    if (own.length === 0) continue;
    const rule = cellRule(own, field.type);
    // RowPlan reads a schema column from its first file column of that name.
    const at = fileColumns.indexOf(field.name);
    if (at >= 0) out[at] = rule;
    else if (!rule.nullPasses) return null;
  }
  return out;
}

/** Most allowed values compared byte by byte; a longer list is looked up by text. */
const BYTE_COMPARED_VALUES = 16;

/**
 * One column's rules on the cells of the byte check. Where a rule has a form on the bytes (no text
 * decoded) it gives compileRule's answer: a range on a numeric column compares the same Number, an
 * allowed value is the same UTF-8 bytes as the same text. Every other rule runs compileRule's check
 * on the decoded text.
 */
function cellRule(rules: readonly DataQualityRule[], type: FieldType): CsvCellRule {
  const numeric = NUMERIC_TYPES.has(type);
  const tests = rules.flatMap((rule): ((cell: CsvCell) => boolean)[] => {
    if (rule.type === 'not_null') return [];
    if (rule.type === 'range' && numeric) {
      const { min, max } = rangeKeys(rule, type);
      return [
        (cell) => {
          const k = numberOf(cell);
          return !(min !== null && k < min) && !(max !== null && k > max);
        },
      ];
    }
    if (rule.type === 'allowed_values' && rule.values.length <= BYTE_COMPARED_VALUES) {
      // A text that is not well-formed UTF-16 is never a cell's (decoded from valid UTF-8).
      const allowed = rule.values
        .map((v) => Buffer.from(v))
        .filter((b, k) => b.toString() === rule.values[k]);
      const check = compileRule(rule, type);
      return [(cell) => (untrimmed(cell) ? oneOf(cell, allowed) : check(value(cell)) === null)];
    }
    if (rule.type === 'regex') {
      const re = compileLinearRegex(rule.pattern);
      const check = regexCheck(rule.pattern, re);
      const bytes = re.testAscii;
      if (bytes === null) return [(cell) => check(value(cell)) === null];
      // An ASCII cell that trimming leaves as it is: its bytes are its value's text.
      return [
        (cell) =>
          untrimmed(cell) && cell.isAscii()
            ? bytes(cell.bytes, cell.start, cell.end)
            : check(value(cell)) === null,
      ];
    }
    const check = compileRule(rule, type);
    return [(cell) => check(value(cell)) === null];
  });
  const nullPasses = rules.every((r) => compileRule(r, type)(null) === null);
  if (tests.length <= 1) return { nullPasses, passes: tests[0] ?? (() => true) };
  return { nullPasses, passes: (cell) => tests.every((test) => test(cell)) };
}

const NUMERIC_TYPES: ReadonlySet<FieldType> = new Set(['int', 'bigint', 'float', 'double', 'decimal']);

/** The value RowPlan's checks see for a cell that is not NULL. */
function value(cell: CsvCell): string {
  return cell.text().trim();
}

/** ASCII bytes String.prototype.trim removes (the others it removes are not ASCII). */
const TRIMMED = new Uint8Array(256);
for (const c of [9, 10, 11, 12, 13, 32]) TRIMMED[c] = 1;

/** Whether trimming leaves the cell as it is: its first and last bytes are ASCII and not blank. */
function untrimmed(cell: CsvCell): boolean {
  const { bytes, start, end } = cell;
  if (start === end) return true;
  const first = bytes[start];
  const last = bytes[end - 1];
  return first < 0x80 && last < 0x80 && TRIMMED[first] === 0 && TRIMMED[last] === 0;
}

/** Whether the cell's bytes are those of one of `values`. */
function oneOf(cell: CsvCell, values: readonly Buffer[]): boolean {
  const { bytes, start, end } = cell;
  const n = end - start;
  next: for (const v of values) {
    if (v.length !== n) continue;
    for (let k = 0; k < n; k++) if (bytes[start + k] !== v[k]) continue next;
    return true;
  }
  return false;
}

/** Exact powers of ten (up to 10^22 a double holds them exactly). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * Number(text) of a numeric cell (which the byte check accepted, so without blanks). A plain
 * `[+-]digits[.digits]` with at most 15 significant digits is read from the bytes: its digits make
 * an exact integer and its power of ten an exact double, so their one division is the correctly
 * rounded value, which Number gives too. Anything else (an exponent, more digits) goes through Number.
 */
function numberOf(cell: CsvCell): number {
  const { bytes, start, end } = cell;
  let p = start;
  const neg = bytes[p] === 0x2d;
  if (neg || bytes[p] === 0x2b) p++;
  let m = 0;
  let significant = 0;
  let digits = 0;
  let frac = -1;
  for (; p < end; p++) {
    const d = bytes[p] - 0x30;
    if (d >= 0 && d <= 9) {
      if (m !== 0 || d !== 0) significant++;
      m = m * 10 + d;
      digits++;
      if (frac >= 0) frac++;
    } else if (bytes[p] === 0x2e && frac < 0) frac = 0;
    else return Number(cell.text());
  }
  if (digits === 0 || significant > 15 || frac > 22) return Number(cell.text());
  const v = frac > 0 ? m / POW10[frac] : m;
  return neg ? -v : v;
}

/** A range rule's bounds, as the keys its values are compared by. */
function rangeKeys(
  rule: Extract<DataQualityRule, { type: 'range' }>,
  type: FieldType,
): { key: (x: number | string) => number; min: number | null; max: number | null } {
  const numeric = type !== 'date' && type !== 'timestamp';
  const key = (x: number | string): number => (numeric ? Number(x) : Date.parse(String(x)));
  return {
    key,
    min: rule.min === undefined ? null : key(rule.min),
    max: rule.max === undefined ? null : key(rule.max),
  };
}

/**
 * What a `unique` rule remembers in one job: its distinct values, those longer than UNIQUE_HASHED_FROM
 * characters as their SHA-256 (so a value's length costs nothing), at most UNIQUE_MAX_VALUES of them
 * (about 150 MB of the worker's heap). Past that the job fails naming the rule rather than grow the
 * worker's memory with the file, for every job it runs.
 */
export const UNIQUE_MAX_VALUES = 2_000_000;
const UNIQUE_HASHED_FROM = 64;

export function compileRule(
  rule: DataQualityRule,
  type: FieldType,
  maxUniqueValues = UNIQUE_MAX_VALUES,
): Check {
  switch (rule.type) {
    case 'not_null':
      return (v) => (v === null ? 'is null (rule not_null)' : null);
    case 'unique': {
      // Apart, so that no short value can pass for a long one's digest.
      const seen = new Set<string>();
      const seenLong = new Set<string>();
      return (v) => {
        if (v === null) return null;
        const long = v.length > UNIQUE_HASHED_FROM;
        const set = long ? seenLong : seen;
        const key = long ? createHash('sha256').update(v).digest().toString('latin1') : v;
        if (set.has(key)) return `value '${short(v)}' is a duplicate (rule unique)`;
        if (seen.size + seenLong.size >= maxUniqueValues) {
          throw new Error(
            `rule unique on column '${rule.column}' remembers at most ${maxUniqueValues.toLocaleString('en-US')} ` +
              'distinct values in one job: split the file, or let the destination enforce it (a primary key ' +
              'with writeMode merge)',
          );
        }
        set.add(key);
        return null;
      };
    }
    case 'range': {
      const { key, min, max } = rangeKeys(rule, type);
      return (v) => {
        if (v === null) return null;
        const k = key(v);
        if (min !== null && k < min) return `value '${short(v)}' is below ${rule.min} (rule range)`;
        if (max !== null && k > max) return `value '${short(v)}' is above ${rule.max} (rule range)`;
        return null;
      };
    }
    case 'regex':
      // Compiled once per job; linear in the value, with the constant compileLinearRegex bounds.
      return regexCheck(rule.pattern, compileLinearRegex(rule.pattern));
    case 'allowed_values': {
      const allowed = new Set(rule.values);
      return (v) =>
        v === null || allowed.has(v)
          ? null
          : `value '${short(v)}' is not one of the allowed values (rule allowed_values)`;
    }
    case 'type_conformance':
      // Coercion to the schema type already enforces it for every column.
      return () => null;
  }
}

function regexCheck(pattern: string, re: LinearRegex): Check {
  return (v) =>
    v === null || re.test(v) ? null : `value '${short(v)}' does not match /${pattern}/ (rule regex)`;
}

function short(v: string): string {
  return v.length > 100 ? `${v.slice(0, 100)}…` : v;
}
