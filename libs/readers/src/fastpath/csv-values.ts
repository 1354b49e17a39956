/**
 * The value checks of the CSV fast path's byte check (csv-check.ts): is one field's text, as bytes,
 * a value of its column's type that PostgreSQL's COPY and the reference path's coercer read alike?
 * `false` is always safe (the chunk goes through the reference path); `true` must never be wrong.
 */
import type { FieldType } from '@tapyard/model';

const SPACE = 32;
const DOT = 0x2e;
const PLUS = 0x2b;
const MINUS = 0x2d;
const COLON = 0x3a;
const ZERO = 0x30;

const T_STRING = 0;
const T_BOOLEAN = 1;
const T_INT = 2;
const T_BIGINT = 3;
const T_FLOAT = 4;
const T_DOUBLE = 5;
const T_DATE = 6;
const T_TIMESTAMP = 7;
const T_DECIMAL = 8;
export const TYPE_CODES: Record<FieldType, number> = {
  string: T_STRING,
  boolean: T_BOOLEAN,
  int: T_INT,
  bigint: T_BIGINT,
  float: T_FLOAT,
  double: T_DOUBLE,
  date: T_DATE,
  timestamp: T_TIMESTAMP,
  decimal: T_DECIMAL,
};

const INT4_POS = Buffer.from('2147483647');
const INT4_NEG = Buffer.from('2147483648');
const INT8_POS = Buffer.from('9223372036854775807');
const INT8_NEG = Buffer.from('9223372036854775808');

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Single-byte booleans the reference accepts. */
const BOOL1 = new Uint8Array(256);
for (const c of 'tTfFyYnN10') BOOL1[c.charCodeAt(0)] = 1;

/** Whether bytes [s, e) of `b` are a plain value of the type with this code (not string, not decimal). */
export function typedValue(type: number, b: Buffer, s: number, e: number): boolean {
  switch (type) {
    case T_INT:
      return integer(b, s, e, INT4_POS, INT4_NEG);
    case T_BIGINT:
      return integer(b, s, e, INT8_POS, INT8_NEG);
    case T_FLOAT:
      return float(b, s, e, 37);
    case T_DOUBLE:
      return float(b, s, e, 307);
    case T_BOOLEAN:
      return boolean(b, s, e);
    case T_DATE:
      return e - s === 10 && date(b, s);
    case T_TIMESTAMP:
      return timestamp(b, s, e);
    default:
      return false;
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function integer(b: Buffer, s: number, e: number, maxPos: Buffer, maxNeg: Buffer): boolean {
  let p = s;
  let neg = false;
  if (b[p] === MINUS) {
    neg = true;
    p++;
  } else if (b[p] === PLUS) p++;
  if (p === e) return false;
  for (let k = p; k < e; k++) if (!isDigit(b[k])) return false;
  while (p < e - 1 && b[p] === ZERO) p++;
  const limit = neg ? maxNeg : maxPos;
  const len = e - p;
  if (len !== limit.length) return len < limit.length;
  for (let k = 0; k < len; k++) {
    const d = b[p + k] - limit[k];
    if (d !== 0) return d < 0;
  }
  return true;
}

/** The float grammar, and a decimal magnitude within ±`maxMagnitude` (or zero). */
function float(b: Buffer, s: number, e: number, maxMagnitude: number): boolean {
  let p = s;
  if (b[p] === PLUS || b[p] === MINUS) p++;
  const intStart = p;
  while (p < e && isDigit(b[p])) p++;
  const intEnd = p;
  let fracStart = p;
  let fracEnd = p;
  if (p < e && b[p] === DOT) {
    fracStart = ++p;
    while (p < e && isDigit(b[p])) p++;
    fracEnd = p;
  }
  if (intEnd === intStart && fracEnd === fracStart) return false;
  let exp = 0;
  if (p < e && (b[p] | 0x20) === 0x65) {
    p++;
    let expNeg = false;
    if (p < e && (b[p] === PLUS || b[p] === MINUS)) expNeg = b[p++] === MINUS;
    const expStart = p;
    while (p < e && isDigit(b[p])) exp = exp * 10 + b[p++] - ZERO;
    if (p === expStart || p - expStart > 4) return false;
    if (expNeg) exp = -exp;
  }
  if (p !== e) return false;
  // The position of the first non-zero digit gives the magnitude.
  for (let k = intStart; k < intEnd; k++) {
    if (b[k] !== ZERO) return within(intEnd - k - 1 + exp, maxMagnitude);
  }
  for (let k = fracStart; k < fracEnd; k++) {
    if (b[k] !== ZERO) return within(exp - (k - fracStart + 1), maxMagnitude);
  }
  return true;
}

/** The decimal grammar, within `before` integer digits (leading zeros aside) and `after` fraction digits. */
export function decimal(b: Buffer, s: number, e: number, before: number, after: number): boolean {
  let p = s;
  if (b[p] === PLUS || b[p] === MINUS) p++;
  while (p < e && b[p] === ZERO) p++;
  const intStart = p;
  while (p < e && isDigit(b[p])) p++;
  const intDigits = p - intStart;
  const anyInt = p > s && isDigit(b[p - 1]);
  let fracDigits = 0;
  if (p < e && b[p] === DOT) {
    const fracStart = ++p;
    while (p < e && isDigit(b[p])) p++;
    fracDigits = p - fracStart;
  }
  return p === e && (anyInt || fracDigits > 0) && intDigits <= before && fracDigits <= after;
}

// Not Math.abs: a global lookup per value is slow inside a vm context (as under Jest).
function within(m: number, max: number): boolean {
  return m <= max && m >= -max;
}

function boolean(b: Buffer, s: number, e: number): boolean {
  // `| 0x20` lower-cases an ASCII letter; for the letters compared here no other byte maps to them.
  switch (e - s) {
    case 1:
      return BOOL1[b[s]] === 1;
    case 2:
      return (b[s] | 0x20) === 0x6e && (b[s + 1] | 0x20) === 0x6f; // no
    case 3:
      return (b[s] | 0x20) === 0x79 && (b[s + 1] | 0x20) === 0x65 && (b[s + 2] | 0x20) === 0x73; // yes
    case 4:
      return (
        (b[s] | 0x20) === 0x74 &&
        (b[s + 1] | 0x20) === 0x72 &&
        (b[s + 2] | 0x20) === 0x75 &&
        (b[s + 3] | 0x20) === 0x65
      ); // true
    case 5:
      return (
        (b[s] | 0x20) === 0x66 &&
        (b[s + 1] | 0x20) === 0x61 &&
        (b[s + 2] | 0x20) === 0x6c &&
        (b[s + 3] | 0x20) === 0x73 &&
        (b[s + 4] | 0x20) === 0x65
      ); // false
    default:
      return false;
  }
}

/** Two ASCII digits at `p` as a number, or -1. */
function digits2(b: Buffer, p: number): number {
  const x = b[p] - ZERO;
  const y = b[p + 1] - ZERO;
  return x >= 0 && x <= 9 && y >= 0 && y <= 9 ? x * 10 + y : -1;
}

/** `YYYY-MM-DD` at `s` (10 bytes, the caller checked they exist), a real date in 0001-9999. */
function date(b: Buffer, s: number): boolean {
  if (b[s + 4] !== MINUS || b[s + 7] !== MINUS) return false;
  const hi = digits2(b, s);
  const lo = digits2(b, s + 2);
  const month = digits2(b, s + 5);
  const day = digits2(b, s + 8);
  if (hi < 0 || lo < 0 || month < 1 || month > 12 || day < 1) return false;
  const year = hi * 100 + lo;
  if (year === 0) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month]);
}

function timestamp(b: Buffer, s: number, e: number): boolean {
  if (e - s < 10 || !date(b, s)) return false;
  if (e - s === 10) return true;
  let p = s + 10;
  const sep = b[p];
  if ((sep !== 0x54 && sep !== 0x74 && sep !== SPACE) || p + 6 > e || b[p + 3] !== COLON) return false;
  const hour = digits2(b, p + 1);
  const minute = digits2(b, p + 4);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return false;
  p += 6;
  if (p < e && b[p] === COLON) {
    if (p + 3 > e) return false;
    const second = digits2(b, p + 1);
    if (second < 0 || second > 59) return false;
    p += 3;
    if (p < e && b[p] === DOT) {
      const start = ++p;
      while (p < e && isDigit(b[p])) p++;
      if (p === start || p - start > 9) return false;
    }
  }
  if (p < e) {
    const z = b[p];
    if (z === 0x5a || z === 0x7a) p++;
    else if (z === PLUS || z === MINUS) {
      if (p + 3 > e) return false;
      const zh = digits2(b, p + 1);
      if (zh < 0 || zh > 14) return false;
      p += 3;
      if (p < e) {
        if (b[p] === COLON) p++;
        if (p + 2 !== e) return false;
        const zm = digits2(b, p);
        if (zm < 0 || zm > 59) return false;
        p += 2;
      }
    } else return false;
  }
  return p === e;
}
