import { Coerced, fail, isDigit, isNullToken, quoted, trimmed } from './coerced';

/** The date and timestamp rules (see coerce.ts). */

function digits2(s: string, i: number): number {
  const a = s.charCodeAt(i) - 0x30;
  const b = s.charCodeAt(i + 1) - 0x30;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** 1 for a valid YYYY-MM-DD at the start of `s`, 0 for a bad shape, -1 for a non-existent date. */
function checkDate(s: string): number {
  if (s.length < 10 || s.charCodeAt(4) !== 0x2d || s.charCodeAt(7) !== 0x2d) return 0;
  const hi = digits2(s, 0);
  const lo = digits2(s, 2);
  const month = digits2(s, 5);
  const day = digits2(s, 8);
  if (hi < 0 || lo < 0 || month < 0 || day < 0) return 0;
  const year = hi * 100 + lo;
  if (year === 0 || month < 1 || month > 12 || day < 1) return -1;
  let dim = DAYS_IN_MONTH[month];
  if (month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)) dim = 29;
  return day <= dim ? 1 : -1;
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function coerceDate(raw: string): Coerced {
  const s = trimmed(raw);
  if (s.length === 10) {
    const d = checkDate(s);
    if (d === 1) return s;
    if (d === -1) return fail(`${quoted(s)} is not a valid date`);
  }
  return isNullToken(s) ? null : fail(`${quoted(s)} is not a date (expected YYYY-MM-DD)`);
}

export function coerceTimestamp(raw: string): Coerced {
  const s = trimmed(raw);
  const r = checkTimestamp(s);
  if (r === 1) return normaliseTimestamp(s);
  if (isNullToken(s)) return null;
  if (r === -1) return fail(`${quoted(s)} is not a valid timestamp`);
  return fail(`${quoted(s)} is not a timestamp (expected ISO 8601, e.g. 2024-01-31T12:00:00Z)`);
}

/** 1 valid, 0 bad shape, -1 a field out of range. */
function checkTimestamp(s: string): number {
  const n = s.length;
  const d = checkDate(s);
  if (d !== 1) return d;
  if (n === 10) return 1;
  const sep = s.charCodeAt(10);
  if ((sep !== 0x54 && sep !== 0x74 && sep !== 0x20) || n < 16 || s.charCodeAt(13) !== 0x3a) return 0;
  const hour = digits2(s, 11);
  const minute = digits2(s, 14);
  if (hour < 0 || minute < 0) return 0;
  let second = 0;
  let fractionNonZero = false;
  let i = 16;
  if (i < n && s.charCodeAt(i) === 0x3a) {
    if (i + 3 > n) return 0;
    second = digits2(s, i + 1);
    if (second < 0) return 0;
    i += 3;
    if (i < n && s.charCodeAt(i) === 0x2e) {
      const start = ++i;
      while (i < n && isDigit(s.charCodeAt(i))) {
        if (s.charCodeAt(i) !== 0x30) fractionNonZero = true;
        i++;
      }
      if (i === start) return 0;
    }
  }
  if (i < n) {
    const z = s.charCodeAt(i);
    if (z === 0x5a || z === 0x7a) i++;
    else if (z === 0x2b || z === 0x2d) {
      if (i + 3 > n) return 0;
      const zh = digits2(s, i + 1);
      if (zh < 0) return 0;
      i += 3;
      let zm = 0;
      if (i < n) {
        if (s.charCodeAt(i) === 0x3a) i++;
        if (i + 2 !== n) return 0;
        zm = digits2(s, i);
        if (zm < 0) return 0;
        i += 2;
      }
      if (zh > 15 || zm > 59) return -1;
    } else return 0;
  }
  if (i !== n) return 0;
  if (minute > 59 || second > 60) return -1;
  if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || fractionNonZero))) return -1;
  return 1;
}

/**
 * A checked timestamp in the one form every consumer reads alike: `T` between date and time,
 * midnight for a date alone, and an explicit zone (`Z` when it had none: PostgreSQL loads with
 * TimeZone UTC, and JavaScript would otherwise read it as local time).
 */
function normaliseTimestamp(s: string): string {
  const n = s.length;
  if (n === 10) return `${s}T00:00Z`;
  let t = s.charCodeAt(10) === 0x54 ? s : `${s.slice(0, 10)}T${s.slice(11)}`;
  const last = t.charCodeAt(n - 1);
  if (last === 0x5a) return t;
  if (last === 0x7a) return `${t.slice(0, n - 1)}Z`;
  // A zone is a sign after the time part (position 16 at the earliest: HH:MM ends at 16).
  let z = -1;
  for (let i = n - 1; i >= 16; i--) {
    const c = t.charCodeAt(i);
    if (c === 0x2b || c === 0x2d) {
      z = i;
      break;
    }
  }
  if (z < 0) return `${t}Z`;
  const zone = t.slice(z + 1).replace(':', '');
  t = t.slice(0, z + 1);
  return zone.length === 2 ? `${t}${zone}:00` : `${t}${zone.slice(0, 2)}:${zone.slice(2)}`;
}
