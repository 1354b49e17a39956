import { Cron, type CronOptions } from 'croner';
import { ValidationError } from '@tapyard/core';

/** A cron expression or timezone the caller sent is not a usable Quartz schedule (HTTP 400). */
export class InvalidCronError extends ValidationError {}

/** A parsed Quartz expression bound to a timezone. */
export interface QuartzSchedule {
  readonly expression: string;
  readonly timezone: string;
  /** First fire time strictly after `after` (whole seconds), or null when the schedule has run out. */
  next(after: Date): Date | null;
  /** Up to `count` fire times after `after`; fewer when the schedule runs out. */
  nextRuns(count: number, after: Date): Date[];
}

// Quartz refuses years outside this span; its trigger search also stops at the end of it.
const MIN_YEAR = 1970;
const MAX_YEAR = 2099;
// Quartz caps the 'n' of 'L-n' at 30.
const MAX_LAST_DAY_OFFSET = 30;

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** Largest step Quartz accepts (CronExpression.checkIncrementRange). */
  maxStep: number;
  names?: readonly string[];
}

const SECOND: FieldSpec = { name: 'seconds', min: 0, max: 59, maxStep: 59 };
const MINUTE: FieldSpec = { name: 'minutes', min: 0, max: 59, maxStep: 59 };
const HOUR: FieldSpec = { name: 'hours', min: 0, max: 23, maxStep: 23 };
const DOM: FieldSpec = { name: 'day-of-month', min: 1, max: 31, maxStep: 31 };
const MONTH: FieldSpec = { name: 'month', min: 1, max: 12, maxStep: 12, names: MONTH_NAMES };
const DOW: FieldSpec = { name: 'day-of-week', min: 1, max: 7, maxStep: 7, names: DAY_NAMES };
const YEAR: FieldSpec = { name: 'year', min: MIN_YEAR, max: MAX_YEAR, maxStep: MAX_YEAR - MIN_YEAR };

/**
 * One comma-separated entry: `5`, `1-5`, `*\/15`, `5/15` or `1-10/2`. Kept, not just expanded,
 * so describeQuartz can say "every 15 minutes".
 */
interface FieldPart {
  from: number;
  /** null for a single value or an open-ended step (`5/15` runs to the field maximum). */
  to: number | null;
  step: number | null;
  star: boolean;
}

interface NumericField {
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

interface QuartzFields {
  second: NumericField;
  minute: NumericField;
  hour: NumericField;
  dayOfMonth: DaySpec;
  month: NumericField;
  dayOfWeek: WeekdaySpec;
  /** null when the optional year field is absent. */
  year: NumericField | null;
}

function invalid(reason: string): InvalidCronError {
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
function parseQuartzFields(expression: string): QuartzFields {
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

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Quartz's nearest-weekday rule: never leaves the month (1W on a Saturday is Monday the 3rd). */
function nearestWeekday(year: number, month: number, day: number): number {
  const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  if (weekday === 6) return day === 1 ? 3 : day - 1;
  if (weekday === 0) return day === daysInMonth(year, month) ? day - 2 : day + 1;
  return day;
}

function cronerList(field: NumericField, spec: FieldSpec): string {
  return field.values.length === spec.max - spec.min + 1 ? '*' : field.values.join(',');
}

type NextFn = (after: Date) => Date | null;

function buildNext(fields: QuartzFields, timezone: string): NextFn {
  const options: CronOptions = {
    mode: '6-or-7-parts',
    alternativeWeekdays: true,
    domAndDow: true,
    paused: true,
    timezone,
  };
  // croner gets plain value lists, so Quartz-only syntax (5/15, wrapped ranges, lone L) never reaches it.
  const time = [
    cronerList(fields.second, SECOND),
    cronerList(fields.minute, MINUTE),
    cronerList(fields.hour, HOUR),
  ];
  const years = fields.year?.values ?? null;
  const yearText = fields.year ? cronerList(fields.year, YEAR) : '*';
  const monthOf = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: 'numeric' });
  const local = (d: Date): { year: number; month: number } => {
    const parts = monthOf.formatToParts(d);
    const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value);
    return { year: get('year'), month: get('month') };
  };
  const capped = (run: Date | null): Date | null => (run && local(run).year <= MAX_YEAR ? run : null);

  const dom = fields.dayOfMonth;
  if (dom.kind === 'last' && dom.offset > 0) {
    // croner has no 'L-n': pick the day month by month and let croner find the time on that one day.
    return (after) => {
      let { year, month } = local(after);
      if (year < MIN_YEAR) [year, month] = [MIN_YEAR, 1];
      for (; year <= MAX_YEAR; month === 12 ? ((month = 1), year++) : month++) {
        if (!fields.month.values.includes(month) || (years && !years.includes(year))) continue;
        let day = daysInMonth(year, month) - dom.offset;
        if (day < 1) continue;
        if (dom.weekday) day = nearestWeekday(year, month, day);
        const run = new Cron([...time, day, month, '*', year].join(' '), options).nextRun(after);
        if (run) return capped(run);
      }
      return null;
    };
  }

  const domText =
    dom.kind === 'none'
      ? '*'
      : dom.kind === 'values'
        ? cronerList(dom.field, DOM)
        : dom.kind === 'nearest'
          ? `${dom.day}W`
          : dom.weekday
            ? 'LW'
            : 'L';
  const dow = fields.dayOfWeek;
  const dowText =
    dow.kind === 'none'
      ? '*'
      : dow.kind === 'values'
        ? cronerList(dow.field, DOW)
        : dow.kind === 'last'
          ? `${dow.day}L`
          : `${dow.day}#${dow.nth}`;
  const cron = new Cron(
    [...time, domText, cronerList(fields.month, MONTH), dowText, yearText].join(' '),
    options,
  );
  return (after) => capped(cron.nextRun(after));
}

// Checking from the start of Quartz's year span makes "never fires" a property of the calendar, not of today.
const BEFORE_MIN_YEAR = new Date(Date.UTC(MIN_YEAR, 0, 1) - 1000);

function assertFires(fields: QuartzFields, expression: string): void {
  if (buildNext(fields, 'UTC')(BEFORE_MIN_YEAR) === null) {
    throw invalid(
      `cron expression '${expression.trim()}' never fires (no date in ${MIN_YEAR}-${MAX_YEAR} matches it)`,
    );
  }
}

/** null when `expression` is a valid Quartz expression that fires at least once, else the reason. */
export function validateQuartz(expression: string): string | null {
  try {
    assertFires(parseQuartzFields(expression), expression);
    return null;
  } catch (err) {
    if (err instanceof InvalidCronError) return err.message;
    throw err;
  }
}

/** Parses and binds a Quartz expression to an IANA timezone; throws InvalidCronError with the reason. */
export function parseQuartz(expression: string, timezone = 'UTC'): QuartzSchedule {
  const fields = parseQuartzFields(expression);
  assertFires(fields, expression);
  assertTimezone(timezone);
  const next = buildNext(fields, timezone);
  return {
    expression: expression.trim(),
    timezone,
    next,
    nextRuns(count: number, after: Date): Date[] {
      const runs: Date[] = [];
      for (let run = next(after); run && runs.length < count; run = next(run)) runs.push(run);
      return runs;
    },
  };
}

const MONTH_FULL = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAY_FULL = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth'];

const pad = (n: number): string => String(n).padStart(2, '0');
const clock = (h: number, m: number, s: number): string => `${pad(h)}:${pad(m)}:${pad(s)}`;
const monthName = (v: number): string => MONTH_FULL[v - 1];
const dayName = (v: number): string => DAY_FULL[v - 1];
const every = (n: number, unit: string): string => (n === 1 ? `every ${unit}` : `every ${n} ${unit}s`);

function list(items: string[]): string {
  return items.length <= 1
    ? items.join('')
    : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

const isSingle = (p: FieldPart): boolean => !p.star && p.to === null && p.step === null;
const allSingle = (f: NumericField): boolean => f.parts.every(isSingle);

/** The single range of `a-b` fields, which read best as "X through Y". */
function plainRange(f: NumericField): [number, number] | null {
  const p = f.parts[0];
  return f.parts.length === 1 && !p.star && p.step === null && p.to !== null ? [p.from, p.to] : null;
}

/** n for `*\/n` or `min/n`, which read as a plain "every n units". */
function everyStep(f: NumericField, spec: FieldSpec): number | null {
  const p = f.parts[0];
  if (f.any) return 1;
  if (f.parts.length !== 1 || p.step === null) return null;
  return p.star || (p.from === spec.min && p.to === null) ? p.step : null;
}

/** Field-by-field fallback, e.g. "minutes 10 and 44" or "every 5 minutes from minute 3 through 30". */
function fieldText(f: NumericField, unit: string, name: (v: number) => string = String): string {
  if (allSingle(f)) return `${unit}${f.values.length > 1 ? 's' : ''} ${list(f.values.map(name))}`;
  return list(
    f.parts.map((p) => {
      if (isSingle(p)) return `${unit} ${name(p.from)}`;
      if (p.step === null) return `${unit}s ${name(p.from)} through ${name(p.to ?? p.from)}`;
      if (p.star) return every(p.step, unit);
      const span =
        p.to === null
          ? `starting at ${unit} ${name(p.from)}`
          : `from ${unit} ${name(p.from)} through ${name(p.to)}`;
      return `${every(p.step, unit)} ${span}`;
    }),
  );
}

const at = (text: string): string => (text.startsWith('every') ? text : `at ${text}`);

function describeTime({ second: s, minute: m, hour: h }: QuartzFields): { text: string; fixed: boolean } {
  if (
    allSingle(s) &&
    allSingle(m) &&
    allSingle(h) &&
    s.values.length * m.values.length * h.values.length <= 6
  ) {
    const times = h.values.flatMap((hh) => m.values.flatMap((mm) => s.values.map((ss) => clock(hh, mm, ss))));
    return { text: `At ${list(times)}`, fixed: true };
  }
  if (s.values.length === 1 && m.values.length === 1) {
    const [sec, min] = [s.values[0], m.values[0]];
    const past =
      sec !== 0 ? ` at ${pad(min)}:${pad(sec)} past the hour` : min !== 0 ? ` at minute ${min}` : '';
    const step = everyStep(h, HOUR);
    if (step !== null) return { text: `${capitalize(every(step, 'hour'))}${past}`, fixed: false };
    const p = h.parts[0];
    if (h.parts.length === 1 && p.to !== null && !p.star) {
      const [from, to] = [clock(p.from, min, sec), clock(p.to, min, sec)];
      const text =
        p.step === null
          ? `Every hour from ${from} through ${to}`
          : `Every ${p.step} hours between ${from} and ${to}`;
      return { text, fixed: false };
    }
  }
  const out: string[] = [];
  const secStep = everyStep(s, SECOND);
  if (secStep !== null) out.push(every(secStep, 'second'));
  else if (!(s.values.length === 1 && s.values[0] === 0)) out.push(at(fieldText(s, 'second')));
  const minStep = everyStep(m, MINUTE);
  if (minStep === null) out.push(at(fieldText(m, 'minute')));
  else if (!(m.any && secStep !== null)) out.push(every(minStep, 'minute'));
  if (!h.any) {
    const hourStep = everyStep(h, HOUR);
    const span = plainRange(h) ?? (h.values.length === 1 ? [h.values[0], h.values[0]] : null);
    if (hourStep !== null) out.push(every(hourStep, 'hour'));
    else if (span) out.push(`between ${pad(span[0])}:00 and ${pad(span[1])}:59`);
    else out.push(at(fieldText(h, 'hour')).replace(/^at /, 'in '));
  }
  return { text: capitalize(out.join(', ')), fixed: false };
}

function describeWeekdays(f: NumericField): string {
  const span = plainRange(f);
  if (span) return `${dayName(span[0])} through ${dayName(span[1])}`;
  // Keep the order the user wrote single days in ("SAT,SUN" reads as Saturday and Sunday).
  const days = allSingle(f) ? f.parts.map((p) => p.from) : f.values;
  return `on ${list(days.map(dayName))}`;
}

function describeMonthDays(f: NumericField): string {
  const step = everyStep(f, DOM);
  if (step !== null) return every(step, 'day');
  const p = f.parts[0];
  if (f.parts.length === 1 && p.step !== null && p.to === null) {
    return `${every(p.step, 'day')} starting on day ${p.from} of the month`;
  }
  const span = plainRange(f);
  if (span) return `on days ${span[0]} through ${span[1]} of the month`;
  return `on ${fieldText(f, 'day')} of the month`;
}

function describeDays({ dayOfMonth: dom, dayOfWeek: dow }: QuartzFields): string | null {
  if (dow.kind === 'last') return `on the last ${dayName(dow.day)} of the month`;
  if (dow.kind === 'nth') return `on the ${ORDINALS[dow.nth - 1]} ${dayName(dow.day)} of the month`;
  if (dow.kind === 'values' && !dow.field.any) return describeWeekdays(dow.field);
  if (dom.kind === 'nearest') return `on the weekday nearest day ${dom.day} of the month`;
  if (dom.kind === 'last') {
    const day =
      dom.offset === 0
        ? 'the last day of the month'
        : `the last day of the month minus ${dom.offset} day${dom.offset > 1 ? 's' : ''}`;
    if (!dom.weekday) return `on ${day}`;
    return dom.offset === 0 ? 'on the last weekday of the month' : `on the weekday nearest ${day}`;
  }
  if (dom.kind === 'values' && !dom.field.any) return describeMonthDays(dom.field);
  return null;
}

function describeMonths(f: NumericField): string | null {
  if (f.any) return null;
  const step = everyStep(f, MONTH);
  if (step !== null) return every(step, 'month');
  const p = f.parts[0];
  if (f.parts.length === 1 && p.step !== null && p.to === null) {
    return `${every(p.step, 'month')} starting in ${monthName(p.from)}`;
  }
  const span = plainRange(f);
  if (span) return `${monthName(span[0])} through ${monthName(span[1])}`;
  return `in ${list((allSingle(f) ? f.parts.map((x) => x.from) : f.values).map(monthName))}`;
}

function describeYears(f: NumericField | null): string | null {
  if (!f || f.any) return null;
  if (allSingle(f)) return `in ${list(f.values.map(String))}`;
  const span = plainRange(f);
  if (span) return `from ${span[0]} through ${span[1]}`;
  const step = everyStep(f, YEAR);
  if (step !== null) return every(step, 'year');
  const p = f.parts[0];
  if (f.parts.length === 1 && p.step !== null && p.to === null)
    return `${every(p.step, 'year')} starting in ${p.from}`;
  const text = fieldText(f, 'year');
  return text.startsWith('every') ? text : `in ${text}`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Deterministic plain-English reading of a Quartz expression; throws InvalidCronError when it is invalid. */
export function describeQuartz(expression: string): string {
  const fields = parseQuartzFields(expression);
  const time = describeTime(fields);
  const { dayOfMonth: dom, month } = fields;
  let phrases: (string | null)[];
  if (
    dom.kind === 'values' &&
    dom.field.values.length === 1 &&
    allSingle(dom.field) &&
    month.values.length === 1
  ) {
    // One day of one month reads as a date.
    phrases = [`on ${monthName(month.values[0])} ${dom.field.values[0]}`];
  } else {
    phrases = [describeDays(fields), describeMonths(month)];
    if (time.fixed && phrases[0] === null) phrases.unshift('every day');
  }
  phrases.push(describeYears(fields.year));
  return phrases
    .filter((p): p is string => p !== null)
    .reduce((text, p) => `${text}${p.startsWith('on ') || p.startsWith('in ') ? ' ' : ', '}${p}`, time.text);
}
