import { Cron, type CronOptions } from 'croner';
import {
  DOM,
  DOW,
  FieldSpec,
  HOUR,
  invalid,
  MAX_YEAR,
  MIN_YEAR,
  MINUTE,
  MONTH,
  NumericField,
  QuartzFields,
  SECOND,
  YEAR,
} from './quartz-parse';

// The bridge to croner, which computes fire times: it is given only plain value lists and the day forms it
// reads as Quartz does; what it cannot express (L-n) is resolved here.

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

export type NextFn = (after: Date) => Date | null;

/**
 * Fire times on a wall clock: croner runs in UTC, whose clock never jumps, and inZone() maps the wall
 * times onto a zone's instants.
 */
export function buildNext(fields: QuartzFields): NextFn {
  const timezone = 'UTC';
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

/** The zone's offset from UTC at `at`, in milliseconds (Intl gives the local wall clock). */
export function zoneOffsetMs(zone: Intl.DateTimeFormat, at: Date): number {
  const parts = zone.formatToParts(at);
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value);
  const local = Date.UTC(
    get('year'),
    get('month') - 1,
    get('day'),
    get('hour') % 24,
    get('minute'),
    get('second'),
  );
  return local - Math.floor(at.getTime() / 1000) * 1000;
}

export function wallClock(timezone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
}

/**
 * Fire times in `timezone` from a schedule computed on the wall clock (`wallNext` works in UTC, whose
 * clock never jumps), the way Quartz reads an expression: each wall-clock time fires once. A time the
 * clock shows twice (fall-back) fires at its first occurrence; a time the clock skips (spring-forward)
 * fires at the first valid instant after the gap, and all of the gap's times fire there once.
 * croner's own zone handling differs (it fires a repeated stretch twice and drops some gap times).
 */
export function inZone(wallNext: NextFn, timezone: string): NextFn {
  const zone = wallClock(timezone);
  const offset = (t: number): number => zoneOffsetMs(zone, new Date(t));
  const instantOf = (wall: number): number => {
    const earlier = offset(wall - 12 * 3600_000);
    const later = offset(wall + 12 * 3600_000);
    const shown = [wall - earlier, wall - later].filter((t) => offset(t) === wall - t);
    if (shown.length > 0) return Math.min(...shown);
    // In the gap: the transition lies between the two readings; find its second.
    let [lo, hi] = [wall - later, wall - earlier];
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (offset(mid) === later) hi = mid;
      else lo = mid;
    }
    return hi;
  };
  return (after) => {
    const start = Math.floor(after.getTime() / 1000) * 1000;
    let wall = wallNext(new Date(start + offset(start)));
    // Ends: wall times only grow, and their instants pass `after` once past the stretch it may repeat.
    while (wall) {
      const at = instantOf(wall.getTime());
      if (at > after.getTime()) return new Date(at);
      wall = wallNext(wall);
    }
    return null;
  };
}
// Checking from the start of Quartz's year span makes "never fires" a property of the calendar, not of today.
const BEFORE_MIN_YEAR = new Date(Date.UTC(MIN_YEAR, 0, 1) - 1000);

export function assertFires(fields: QuartzFields, expression: string): void {
  if (buildNext(fields)(BEFORE_MIN_YEAR) === null) {
    throw invalid(
      `cron expression '${expression.trim()}' never fires (no date in ${MIN_YEAR}-${MAX_YEAR} matches it)`,
    );
  }
}
