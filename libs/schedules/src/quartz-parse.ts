import { ValidationError } from '@tapyard/core';

// Parsing: Quartz's syntax rules (not croner's), into fields that keep how each was written.

/** A cron expression or timezone the caller sent is not a usable Quartz schedule (HTTP 400). */
export class InvalidCronError extends ValidationError {}

// Quartz refuses years outside this span; its trigger search also stops at the end of it.
export const MIN_YEAR = 1970;
export const MAX_YEAR = 2099;
// Quartz caps the 'n' of 'L-n' at 30.
const MAX_LAST_DAY_OFFSET = 30;

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

export interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** Largest step Quartz accepts (CronExpression.checkIncrementRange). */
  maxStep: number;
  names?: readonly string[];
}

export const SECOND: FieldSpec = { name: 'seconds', min: 0, max: 59, maxStep: 59 };
export const MINUTE: FieldSpec = { name: 'minutes', min: 0, max: 59, maxStep: 59 };
export const HOUR: FieldSpec = { name: 'hours', min: 0, max: 23, maxStep: 23 };
export const DOM: FieldSpec = { name: 'day-of-month', min: 1, max: 31, maxStep: 31 };
export const MONTH: FieldSpec = { name: 'month', min: 1, max: 12, maxStep: 12, names: MONTH_NAMES };
export const DOW: FieldSpec = { name: 'day-of-week', min: 1, max: 7, maxStep: 7, names: DAY_NAMES };
export const YEAR: FieldSpec = { name: 'year', min: MIN_YEAR, max: MAX_YEAR, maxStep: MAX_YEAR - MIN_YEAR };

/**
 * One comma-separated entry: `5`, `1-5`, `*\/15`, `5/15` or `1-10/2`. Kept, not just expanded,
 * so describeQuartz can say "every 15 minutes".
 */
export interface FieldPart {
  from: number;
  /** null for a single value or an open-ended step (`5/15` runs to the field maximum). */
  to: number | null;
  step: number | null;
  star: boolean;
}

export interface NumericField {
  /** The field was `*` (or `?`): every value. */
  any: boolean;
  parts: FieldPart[];
  /** Sorted, de-duplicated values the field matches. */
  values: number[];
}

type DaySpec =
  | { kind: 'none' }
  | { kind: 'values'; field: NumericField }
  | { kind: 'last'; offset: number; weekday: boolean }
  | { kind: 'nearest'; day: number };

type WeekdaySpec =
  | { kind: 'none' }
  | { kind: 'values'; field: NumericField }
  | { kind: 'last'; day: number }
  | { kind: 'nth'; day: number; nth: number };

export interface QuartzFields {
  second: NumericField;
  minute: NumericField;
  hour: NumericField;
  dayOfMonth: DaySpec;
  month: NumericField;
  dayOfWeek: WeekdaySpec;
  /** null when the optional year field is absent. */
  year: NumericField | null;
}

export function invalid(reason: string): InvalidCronError {
  return new InvalidCronError(reason);
}

function fullField(spec: FieldSpec): NumericField {
  return {
    any: true,
    parts: [{ from: spec.min, to: spec.max, step: null, star: true }],
    values: range(spec),
  };
}

function range(spec: FieldSpec): number[] {
  return Array.from({ length: spec.max - spec.min + 1 }, (_, i) => spec.min + i);
}

function parseValue(text: string, spec: FieldSpec): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) {
      const hint = spec === DOW ? ' (1 = SUN)' : '';
      throw invalid(`${spec.name} value ${value} is out of range ${spec.min}-${spec.max}${hint}`);
    }
    return value;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return index + 1;
  if (spec.names && /^[a-z]+$/i.test(text)) {
    const last = spec.names.length - 1;
    throw invalid(`'${text}' is not a valid ${spec.name} name (${spec.names[0]}-${spec.names[last]})`);
  }
  throw invalid(`'${text}' is not a valid ${spec.name} value`);
}

function parsePart(token: string, spec: FieldSpec): FieldPart {
  const m = /^(?:(\*)|([a-z0-9]+)(?:-([a-z0-9]+))?)(?:\/(\d+))?$/i.exec(token);
  if (!m) throw invalid(`'${token}' is not a valid ${spec.name} value`);
  const step = m[4] === undefined ? null : Number(m[4]);
  if (step !== null && (step < 1 || step > spec.maxStep)) {
    throw invalid(`step in ${spec.name} '${token}' must be between 1 and ${spec.maxStep}`);
  }
  if (m[1]) return { from: spec.min, to: spec.max, step, star: true };
  const from = parseValue(m[2], spec);
  const to = m[3] === undefined ? null : parseValue(m[3], spec);
  // Quartz wraps other backwards ranges (22-2 hours) but refuses backwards years.
  if (spec === YEAR && to !== null && to < from) throw invalid(`year range '${token}' runs backwards`);
  return { from, to, step, star: false };
}

/** Values of one part, with Quartz's wrap-around for ranges such as FRI-MON or 22-2. */
function expand(part: FieldPart, spec: FieldSpec): number[] {
  const end = part.to ?? (part.step === null ? part.from : spec.max);
  const span = spec.max - spec.min + 1;
  const stop = end < part.from ? end + span : end;
  const values: number[] = [];
  for (let v = part.from; v <= stop; v += part.step ?? 1) values.push(v > spec.max ? v - span : v);
  return values;
}

function parseNumeric(text: string, spec: FieldSpec): NumericField {
  if (text === '*') return fullField(spec);
  const parts = text.split(',').map((token) => parsePart(token, spec));
  const values = [...new Set(parts.flatMap((p) => expand(p, spec)))].sort((a, b) => a - b);
  return { any: false, parts, values };
}

function parseDayOfMonth(text: string): DaySpec {
  if (text === '?') return { kind: 'none' };
  const upper = text.toUpperCase();
  if (!/[LW]/.test(upper)) return { kind: 'values', field: parseNumeric(text, DOM) };
  // Quartz 2.3 refuses 'L' and 'W' inside lists; croner refuses LW in lists too.
  if (upper.includes(',')) {
    throw invalid(
      `'${upper.includes('L') ? 'L' : 'W'}' cannot be combined with other days in day-of-month '${text}'`,
    );
  }
  const last = /^L(?:-(\d+))?(W)?$/.exec(upper);
  if (last) {
    const offset = Number(last[1] ?? 0);
    if (offset > MAX_LAST_DAY_OFFSET) {
      throw invalid(`offset in day-of-month '${text}' must be at most ${MAX_LAST_DAY_OFFSET} days`);
    }
    return { kind: 'last', offset, weekday: last[2] === 'W' };
  }
  const nearest = /^(\d+)W$/.exec(upper);
  if (nearest) return { kind: 'nearest', day: parseValue(nearest[1], DOM) };
  throw invalid(
    `day-of-month '${text}' is not valid; 'L' and 'W' are written L, LW, L-n, L-nW or nW (e.g. 15W)`,
  );
}

function parseDayOfWeek(text: string): WeekdaySpec {
  if (text === '?') return { kind: 'none' };
  const upper = text.toUpperCase();
  if (!/[L#]/.test(upper)) return { kind: 'values', field: parseNumeric(text, DOW) };
  // Quartz keeps a single 'L'/'#' day per expression, so it refuses them in lists.
  if (upper.includes(',')) {
    throw invalid(
      `'${upper.includes('#') ? '#' : 'L'}' cannot be combined with other days in day-of-week '${text}'`,
    );
  }
  // A lone 'L' in day-of-week is Quartz for 7 (Saturday).
  if (upper === 'L') return { kind: 'values', field: parseNumeric('7', DOW) };
  const last = /^([A-Z0-9]+)L$/.exec(upper);
  if (last) return { kind: 'last', day: parseValue(last[1], DOW) };
  const nth = /^([A-Z0-9]+)#(.*)$/.exec(upper);
  if (nth) {
    const day = parseValue(nth[1], DOW);
    if (!/^[1-5]$/.test(nth[2]))
      throw invalid(`'#' in day-of-week '${text}' must be followed by a number from 1 to 5`);
    return { kind: 'nth', day, nth: Number(nth[2]) };
  }
  throw invalid(
    `day-of-week '${text}' is not valid; 'L' and '#' are written like 6L (last Friday) or 6#3 (third Friday)`,
  );
}

/** Parses a Quartz expression into its fields, applying Quartz's (not croner's) syntax rules. */
export function parseQuartzFields(expression: string): QuartzFields {
  const text = expression.trim();
  if (text === '') throw invalid('cron expression is empty');
  const f = text.split(/\s+/);
  if (f.length < 6 || f.length > 7) {
    throw invalid(
      `cron expression '${text}' has ${f.length} field${f.length === 1 ? '' : 's'}; Quartz needs 6 or 7 (seconds first)`,
    );
  }
  const plain: [number, FieldSpec][] = [
    [0, SECOND],
    [1, MINUTE],
    [2, HOUR],
    [4, MONTH],
    [6, YEAR],
  ];
  for (const [i, spec] of plain) {
    // croner reads '?' as '*' anywhere; Quartz only allows it in the two day fields.
    if (f[i]?.includes('?'))
      throw invalid(`'?' is only allowed in day-of-month or day-of-week, not in ${spec.name}`);
  }
  const fields: QuartzFields = {
    second: parseNumeric(f[0], SECOND),
    minute: parseNumeric(f[1], MINUTE),
    hour: parseNumeric(f[2], HOUR),
    dayOfMonth: parseDayOfMonth(f[3]),
    month: parseNumeric(f[4], MONTH),
    dayOfWeek: parseDayOfWeek(f[5]),
    year: f[6] === undefined ? null : parseNumeric(f[6], YEAR),
  };
  const domNone = fields.dayOfMonth.kind === 'none';
  const dowNone = fields.dayOfWeek.kind === 'none';
  if (domNone && dowNone) throw invalid(`'?' may appear in day-of-month or day-of-week, not both`);
  if (!domNone && !dowNone) {
    throw invalid(
      `day-of-month '${f[3]}' and day-of-week '${f[5]}' are both specified; Quartz needs '?' in exactly one of them`,
    );
  }
  return fields;
}

/** Throws InvalidCronError unless `timezone` is an IANA zone name the runtime knows. */
export function assertTimezone(timezone: string): void {
  try {
    if (timezone.trim() === '') throw new RangeError('empty');
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw invalid(`timezone '${timezone}' is not a known IANA timezone (e.g. 'UTC' or 'Europe/Berlin')`);
  }
}
