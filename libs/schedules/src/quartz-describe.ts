import {
  DOM,
  FieldPart,
  FieldSpec,
  HOUR,
  MINUTE,
  MONTH,
  NumericField,
  QuartzFields,
  SECOND,
  YEAR,
} from './quartz-parse';

// A deterministic plain-English reading of parsed fields. cronstrue reads differently (no seconds in clock
// times, "only on Wednesday, only in March") from the texts clients and tests already rely on, so it is ours.

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

export function describeFields(fields: QuartzFields): string {
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
