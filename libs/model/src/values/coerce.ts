/**
 * Value coercion: the schema's type rules, the same for every destination. `coercer(type)` returns
 * a specialised function that checks one raw text value and returns its typed value (see Value),
 * or an Invalid holding a one-sentence reason. The rules follow PostgreSQL's input functions, so
 * what is accepted loads everywhere with the same meaning.
 *
 * Rules (documented choices):
 * - NULL is decided before coercion (the caller passes no value); a value is never NULL because of
 *   its text, except that non-string types by default (`nullTokens`) also read empty text and the
 *   tokens `NULL`, `null`, `\N`, `NA`, `N/A` as NULL (`\N`); without `nullTokens` those are errors;
 * - string: the text is kept exactly , the empty string included (so `NULL` in
 *   a string column is the four letters). A NUL character is an error (PostgreSQL text cannot
 *   hold it);
 * - boolean: true/false/t/f/yes/no/y/n/1/0, any case, become `t`/`f`;
 * - int, bigint: optional sign and decimal digits only (`1.0`, `1e3`, `1_000`, `0x1F` are
 *   errors, as PostgreSQL's int input rejects them), range-checked exactly by comparing digits
 *   (no float or BigInt conversion);
 * - float (PostgreSQL real) and double: `[+-]digits[.digits][e[+-]digits]` (`-.5`, `5.`, `1e5`);
 *   NaN, Infinity, `1,5` and values PostgreSQL reports as out of range (overflow, or a non-zero
 *   value that underflows to zero) are errors;
 * - decimal (PostgreSQL numeric): `[+-]digits[.digits]` (`-.5`, `5.`), no exponent, NaN or
 *   Infinity; never rounded: more digits after the point than the column's scale, or before it
 *   than precision - scale allow, is an error naming the limit;
 * - date: `YYYY-MM-DD`, a real calendar date (year 0001-9999);
 * - timestamp: `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM[:SS[.fraction]]` and
 *   a zone (`Z`, `+HH`, `+HH:MM`, `+HHMM`), every field range-checked (24:00:00 and leap second
 *   :60 are accepted, as PostgreSQL does); a date alone is midnight.
 * Typed values: boolean; int, float (rounded to single precision) and double as numbers; bigint as a
 * number when it is a safe integer, else a BigInt; decimal as its canonical text (no `+`, no
 * leading zeros, `0.5` for `.5`, no sign on zero, the fraction padded to a declared scale); string, date (`YYYY-MM-DD`) and timestamp as
 * text, a timestamp normalised to `YYYY-MM-DDTHH:MM[:SS[.fraction]]` and an explicit zone (`Z` or
 * `±HH:MM`; a value without one is UTC), which PostgreSQL and JavaScript's Date both read.
 */
import type { FieldType, SchemaField } from '../pipeline.types';

/** A value of a schema type, or NULL. */
export type Value = boolean | number | bigint | string | null;

/** Why a text is not a value of its column's type (one sentence). */
export class Invalid {
  constructor(readonly reason: string) {}
}

export type Coerced = Value | Invalid;

const TYPE_NAMES: Record<FieldType, string> = {
  string: 'a string',
  boolean: 'a boolean',
  int: 'an int',
  bigint: 'a bigint',
  float: 'a float',
  double: 'a double',
  decimal: 'a decimal',
  date: 'a date',
  timestamp: 'a timestamp',
};

/** A decimal column's limits (see SchemaField). */
export type DecimalLimits = Pick<SchemaField, 'precision' | 'scale'>;

/**
 * A fast specialised coercion function for `type`. `nullTokens` (default): non-string types read
 * empty text and the null tokens as NULL; without it only the caller's NULL is NULL (a pipeline
 * with its own `nullValues` decides that itself), and such text is not a value of the type.
 * `limits`: a decimal column's precision and scale.
 */
export function coercer(
  type: FieldType,
  nullTokens = true,
  limits: DecimalLimits = {},
): (raw: string) => Coerced {
  const base = typeCoercer(type, limits);
  if (nullTokens || type === 'string') return base;
  return (raw) => {
    const s = trimmed(raw);
    return isNullToken(s) ? fail(`${quoted(s)} is not ${TYPE_NAMES[type]}`) : base(raw);
  };
}

function typeCoercer(type: FieldType, limits: DecimalLimits): (raw: string) => Coerced {
  switch (type) {
    case 'string':
      return coerceString;
    case 'boolean':
      return coerceBoolean;
    case 'int':
      return (raw) => coerceInteger(raw, 'an int', INT4_POS, INT4_NEG, false);
    case 'bigint':
      return (raw) => coerceInteger(raw, 'a bigint', INT8_POS, INT8_NEG, true);
    case 'float':
      return (raw) => coerceFloat(raw, true);
    case 'double':
      return (raw) => coerceFloat(raw, false);
    case 'decimal':
      return decimalCoercer(limits);
    case 'date':
      return coerceDate;
    case 'timestamp':
      return coerceTimestamp;
    default: {
      const unknown: never = type;
      throw new Error(`unknown field type ${String(unknown)}`);
    }
  }
}

/** `'value'` for a reason, cut to 100 characters. */
function quoted(value: string): string {
  return `'${value.length > 100 ? `${value.slice(0, 100)}…` : value}'`;
}

function fail(reason: string): Invalid {
  return new Invalid(reason);
}

function trimmed(raw: string): string {
  const n = raw.length;
  if (n === 0) return raw;
  const a = raw.charCodeAt(0);
  const b = raw.charCodeAt(n - 1);
  return a > 0x20 && a < 0x7f && b > 0x20 && b < 0x7f ? raw : raw.trim();
}

function isNullToken(s: string): boolean {
  switch (s.length) {
    case 0:
      return true;
    case 2:
      return s === '\\N' || s === 'NA';
    case 3:
      return s === 'N/A';
    case 4:
      return s === 'NULL' || s === 'null';
    default:
      return false;
  }
}

function coerceString(raw: string): Coerced {
  if (raw.includes('\0'))
    return fail(
      `${quoted(raw.replaceAll('\0', '\\0'))} contains a NUL character, which a string cannot hold`,
    );
  return raw;
}

function coerceBoolean(raw: string): Coerced {
  const s = trimmed(raw);
  switch (s.length) {
    case 1:
      switch (s) {
        case 't':
        case 'T':
        case 'y':
        case 'Y':
        case '1':
          return true;
        case 'f':
        case 'F':
        case 'n':
        case 'N':
        case '0':
          return false;
      }
      break;
    case 0:
      return null;
    default:
      switch (s) {
        case 'true':
        case 'TRUE':
        case 'True':
        case 'yes':
        case 'YES':
        case 'Yes':
          return true;
        case 'false':
        case 'FALSE':
        case 'False':
        case 'no':
        case 'NO':
        case 'No':
          return false;
      }
      if (s.length <= 5) {
        const lower = s.toLowerCase();
        if (lower === 'true' || lower === 'yes') return true;
        if (lower === 'false' || lower === 'no') return false;
      }
      if (isNullToken(s)) return null;
  }
  return fail(`${quoted(s)} is not a boolean`);
}

const INT4_POS = '2147483647';
const INT4_NEG = '2147483648';
const INT8_POS = '9223372036854775807';
const INT8_NEG = '9223372036854775808';

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function coerceInteger(raw: string, what: string, maxPos: string, maxNeg: string, big: boolean): Coerced {
  const s = trimmed(raw);
  const n = s.length;
  let i = 0;
  let neg = false;
  const c0 = s.charCodeAt(0);
  if (c0 === 0x2d) {
    neg = true;
    i = 1;
  } else if (c0 === 0x2b) i = 1;
  if (i === n) return isNullToken(s) ? null : fail(`${quoted(s)} is not ${what}`);
  for (let k = i; k < n; k++) {
    if (!isDigit(s.charCodeAt(k))) return isNullToken(s) ? null : fail(`${quoted(s)} is not ${what}`);
  }
  while (i < n - 1 && s.charCodeAt(i) === 0x30) i++;
  const limit = neg ? maxNeg : maxPos;
  const digits = n - i;
  if (digits < limit.length) return integerValue(s, digits, big);
  if (digits === limit.length) {
    for (let k = 0; k < digits; k++) {
      const a = s.charCodeAt(i + k);
      const b = limit.charCodeAt(k);
      if (a !== b) {
        if (a < b) break;
        return fail(`${quoted(s)} is out of range for ${what}`);
      }
    }
    return integerValue(s, digits, big);
  }
  return fail(`${quoted(s)} is out of range for ${what}`);
}

const FLOAT_MAX = 3.4028234663852886e38;
// Bound once: global lookups per value are slow inside a vm context (as under Jest).
const toNumber = Number;
const fround = Math.fround;
const isFiniteNumber = Number.isFinite;

function coerceFloat(raw: string, single: boolean): Coerced {
  const s = trimmed(raw);
  const n = s.length;
  const what = single ? 'a float' : 'a double';
  let i = 0;
  let c = s.charCodeAt(0);
  if (c === 0x2b || c === 0x2d) c = s.charCodeAt(++i);
  let mantissaDigits = 0;
  let nonZero = false;
  while (i < n && isDigit(c)) {
    mantissaDigits++;
    if (c !== 0x30) nonZero = true;
    c = s.charCodeAt(++i);
  }
  if (c === 0x2e) {
    c = s.charCodeAt(++i);
    while (i < n && isDigit(c)) {
      mantissaDigits++;
      if (c !== 0x30) nonZero = true;
      c = s.charCodeAt(++i);
    }
  }
  let valid = mantissaDigits > 0;
  if (valid && (c === 0x65 || c === 0x45)) {
    c = s.charCodeAt(++i);
    if (c === 0x2b || c === 0x2d) c = s.charCodeAt(++i);
    let expDigits = 0;
    while (i < n && isDigit(c)) {
      expDigits++;
      c = s.charCodeAt(++i);
    }
    valid = expDigits > 0;
  }
  if (!valid || i !== n) return isNullToken(s) ? null : fail(`${quoted(s)} is not ${what}`);
  const v = toNumber(s);
  const stored = single ? (v > FLOAT_MAX || v < -FLOAT_MAX ? Infinity : fround(v)) : v;
  if (!isFiniteNumber(stored) || (stored === 0 && nonZero))
    return fail(`${quoted(s)} is out of range for ${what}`);
  return stored;
}

// PostgreSQL numeric's own limits when a column declares none.
const NUMERIC_INTEGER_DIGITS = 131072;
const NUMERIC_FRACTION_DIGITS = 16383;

function decimalCoercer({ precision, scale }: DecimalLimits): (raw: string) => Coerced {
  const fixedScale = precision === undefined ? scale : (scale ?? 0);
  const maxFraction = fixedScale ?? NUMERIC_FRACTION_DIGITS;
  const maxInteger = precision === undefined ? NUMERIC_INTEGER_DIGITS : precision - (fixedScale ?? 0);
  const declared = precision === undefined ? '' : ` (the column is decimal(${precision},${fixedScale ?? 0}))`;
  return (raw) => {
    const s = trimmed(raw);
    const n = s.length;
    let i = 0;
    const c0 = s.charCodeAt(0);
    const neg = c0 === 0x2d;
    if (neg || c0 === 0x2b) i = 1;
    const intStart = i;
    while (i < n && isDigit(s.charCodeAt(i))) i++;
    const intEnd = i;
    let fracStart = i;
    if (i < n && s.charCodeAt(i) === 0x2e) {
      fracStart = ++i;
      while (i < n && isDigit(s.charCodeAt(i))) i++;
    }
    const fracEnd = i;
    if (i !== n || (intEnd === intStart && fracEnd === fracStart)) {
      if (isNullToken(s)) return null;
      return fail(
        `${quoted(s)} is not a decimal (expected digits with an optional sign and at most one decimal point, no exponent)`,
      );
    }
    let lead = intStart;
    while (lead < intEnd && s.charCodeAt(lead) === 0x30) lead++;
    const intDigits = intEnd - lead;
    const fracDigits = fracEnd - fracStart;
    if (fracDigits > maxFraction)
      return fail(
        `${quoted(s)} has ${digitCount(fracDigits)} after the decimal point, more than the scale ${maxFraction} allows${declared}`,
      );
    if (intDigits > maxInteger)
      return fail(
        `${quoted(s)} has ${digitCount(intDigits)} before the decimal point, more than the ${maxInteger} allowed${declared}`,
      );
    const integer = intDigits === 0 ? '0' : s.slice(lead, intEnd);
    let fraction = s.slice(fracStart, fracEnd);
    if (fixedScale !== undefined && fracDigits < fixedScale) fraction += '0'.repeat(fixedScale - fracDigits);
    const zero = intDigits === 0 && !/[1-9]/.test(fraction);
    const text = fraction.length > 0 ? `${integer}.${fraction}` : integer;
    return neg && !zero ? `-${text}` : text;
  };
}

function digitCount(n: number): string {
  return n === 1 ? '1 digit' : `${n} digits`;
}

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

function coerceDate(raw: string): Coerced {
  const s = trimmed(raw);
  if (s.length === 10) {
    const d = checkDate(s);
    if (d === 1) return s;
    if (d === -1) return fail(`${quoted(s)} is not a valid date`);
  }
  return isNullToken(s) ? null : fail(`${quoted(s)} is not a date (expected YYYY-MM-DD)`);
}

function coerceTimestamp(raw: string): Coerced {
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

/** At most 15 digits is always a safe integer; beyond, only a BigInt keeps every digit. */
function integerValue(s: string, digits: number, big: boolean): number | bigint {
  if (!big || digits <= 15) return toNumber(s);
  const b = BigInt(s);
  return b <= MAX_SAFE && b >= -MAX_SAFE ? toNumber(b) : b;
}
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

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
