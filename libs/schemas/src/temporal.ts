/*
 * Dates and date-times are recognised by a strict subset of RFC 3339 (uppercase `T` and `Z`, no
 * leap second, year 0001 or later) so that every value accepted here is also a valid JSON Schema
 * `date`/`date-time` and a valid XSD `xs:date`/`xs:dateTime`: a format is only claimed when any
 * validator would accept all the samples.
 */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** `YYYY-MM-DD` naming a real day of the (proleptic Gregorian) calendar. */
export function isCalendarDate(value: string): boolean {
  const match = DATE.exec(value);
  if (match === null) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const lastDay = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
  return day <= lastDay;
}

/** An RFC 3339 date-time with a time zone offset, e.g. `2024-01-05T10:00:00.5+01:00`. */
export function isDateTime(value: string): boolean {
  const match = DATE_TIME.exec(value);
  return match !== null && isCalendarDate(match[1]);
}
