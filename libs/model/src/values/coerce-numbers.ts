import type { DecimalLimits } from './coerce';
import { Coerced, fail, isDigit, isNullToken, quoted, trimmed } from './coerced';

/** The numeric types' rules: int and bigint, float and double, decimal (see coerce.ts). */

export const INT4_POS = '2147483647';
export const INT4_NEG = '2147483648';
export const INT8_POS = '9223372036854775807';
export const INT8_NEG = '9223372036854775808';
export function coerceInteger(
  raw: string,
  what: string,
  maxPos: string,
  maxNeg: string,
  big: boolean,
): Coerced {
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

export function coerceFloat(raw: string, single: boolean): Coerced {
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

export function decimalCoercer({ precision, scale }: DecimalLimits): (raw: string) => Coerced {
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

/** At most 15 digits is always a safe integer; beyond, only a BigInt keeps every digit. */
function integerValue(s: string, digits: number, big: boolean): number | bigint {
  if (!big || digits <= 15) return toNumber(s);
  const b = BigInt(s);
  return b <= MAX_SAFE && b >= -MAX_SAFE ? toNumber(b) : b;
}
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
