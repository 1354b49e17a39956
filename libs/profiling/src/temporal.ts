/**
 * Strict ISO 8601 dates and date-times. Only the shapes a database loads without guessing are
 * accepted: regional formats such as `01/02/2024` are ambiguous (day or month first) and stay text.
 */

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_RE =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Real-world UTC offsets run from −12:00 to +14:00; anything wider is a typo, not a zone. */
const MAX_OFFSET_HOURS = 14;

/** A point in time that orders correctly across offsets; `nanos` keeps sub-millisecond fractions. */
export interface TemporalKey {
  seconds: number;
  nanos: number;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Year 0000 is rejected because Postgres has no year zero. */
function isValidCalendarDate(year: number, month: number, day: number): boolean {
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** Days since 1970-01-01 in the proleptic Gregorian calendar (no Date: its two-digit-year quirks). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** Offset in minutes east of UTC, or null when out of range; no designator means UTC. */
function parseOffset(designator: string | undefined): number | null {
  if (designator === undefined || designator === 'Z') return 0;
  const sign = designator.startsWith('-') ? -1 : 1;
  const digits = designator.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2));
  if (hours > MAX_OFFSET_HOURS || minutes > 59 || (hours === MAX_OFFSET_HOURS && minutes > 0)) return null;
  return sign * (hours * 60 + minutes);
}

function parseDate(value: string): TemporalKey | null {
  const m = DATE_RE.exec(value);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (!isValidCalendarDate(year, month, day)) return null;
  return { seconds: daysFromCivil(year, month, day) * 86400, nanos: 0 };
}

/** Leap seconds (`:60`) and `24:00` are rejected: most databases refuse them. */
function parseTimestamp(value: string): TemporalKey | null {
  const m = TIMESTAMP_RE.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const offset = parseOffset(m[8]);
  if (!isValidCalendarDate(year, month, day) || hour > 23 || minute > 59 || second > 59 || offset === null) {
    return null;
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset * 60;
  // Beyond nanoseconds the digits cannot change the order of real data; they are ignored.
  const nanos = m[7] === undefined ? 0 : Number(m[7].slice(0, 9).padEnd(9, '0'));
  return { seconds, nanos };
}

export function isIsoDate(value: string): boolean {
  return parseDate(value) !== null;
}

export function isIsoTimestamp(value: string): boolean {
  return parseTimestamp(value) !== null;
}

/** Sort key for a date or timestamp (a date is its midnight, a naive timestamp is read as UTC). */
export function temporalKey(value: string): TemporalKey | null {
  return parseDate(value) ?? parseTimestamp(value);
}

export function compareTemporalKeys(a: TemporalKey, b: TemporalKey): number {
  return a.seconds - b.seconds || a.nanos - b.nanos;
}
